"""Which of a model's declared prompts (``config_sentence_transformers.json``) each role gets.

Queries get the prompt named ``query``; documents the first of ``document``, ``passage``, ``corpus`` (the names
sentence-transformers' ``encode_document`` and MTEB use, in that order) and then ``doc``. sentence-transformers
6 adds an implicit empty ``document`` prompt, so its ``encode_document`` applies nothing to a model that names
its document prompt ``passage`` (multilingual-e5); evalsuite applies the declared ``passage`` prompt and records
the name in the contract (``doc_prompt``).

A role for which the model declares no prompt of its own gets the prompt ``default_prompt_name`` names, as
sentence-transformers' ``encode`` applies it to every call that names no prompt (``model.encode(corpus)``, MTEB's
fallback). sentence-transformers 6's ``encode_query`` / ``encode_document`` never reach it (their implicit empty
``query`` / ``document`` prompts come first); evalsuite follows ``encode``, the model's declared default, and records
the name applied in the contract.
"""

from __future__ import annotations

from collections.abc import Mapping

QUERY_PROMPT_NAMES = ("query",)
DOC_PROMPT_NAMES = ("document", "passage", "corpus", "doc")


def declared_prompt(prompts: Mapping[str, str], role: str, default: str | None = None) -> tuple[str | None, str]:
    """``(name, text)`` of the prompt the model declares for ``role`` ("query" or "document"), else of its
    ``default`` prompt (``default_prompt_name``); ``(None, "")`` when it declares neither."""
    names = QUERY_PROMPT_NAMES if role == "query" else DOC_PROMPT_NAMES
    found = next(((n, prompts[n]) for n in names if n in prompts), None)
    if found is not None:
        return found
    if default is not None and default in prompts:
        return default, prompts[default]
    return None, ""
