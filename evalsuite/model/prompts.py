"""Which of a model's declared prompts (``config_sentence_transformers.json``) each role gets.

Queries get the prompt named ``query``; documents the first of ``document``, ``passage``, ``corpus`` (the names
sentence-transformers' ``encode_document`` and MTEB use, in that order) and then ``doc``. sentence-transformers
6 adds an implicit empty ``document`` prompt, so its ``encode_document`` applies nothing to a model that names
its document prompt ``passage`` (multilingual-e5); evalsuite applies the declared ``passage`` prompt and records
the name in the contract (``doc_prompt``).
"""

from __future__ import annotations

from collections.abc import Mapping

QUERY_PROMPT_NAMES = ("query",)
DOC_PROMPT_NAMES = ("document", "passage", "corpus", "doc")


def declared_prompt(prompts: Mapping[str, str], role: str) -> tuple[str | None, str]:
    """``(name, text)`` of the prompt the model declares for ``role`` ("query" or "document"); ``(None, "")``
    when it declares none."""
    names = QUERY_PROMPT_NAMES if role == "query" else DOC_PROMPT_NAMES
    return next(((n, prompts[n]) for n in names if n in prompts), (None, ""))
