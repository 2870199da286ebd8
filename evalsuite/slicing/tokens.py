"""Token counts of texts as the model sees them, without loading the model stack.

The model's fast tokenizer (``tokenizer.json``) is read with the ``tokenizers`` library alone: no
torch, no transformers, milliseconds to load. Counts include the special tokens the tokenizer adds
(``[CLS]`` ... ``[SEP]``) and ignore the file's own truncation and padding settings: a count is the
full length before the contract's max_length cuts it, so ``count > max_length`` means "truncated".
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..base.errors import ModelError

TOKENIZER_FILE = "tokenizer.json"
_BATCH = 4096


def count_tokens(tokenizer_dir: Path, texts: Sequence[str]) -> list[int]:
    """Tokens per text (special tokens included), in input order."""
    if not texts:
        return []
    path = Path(tokenizer_dir) / TOKENIZER_FILE
    if not path.is_file():
        return _count_with_transformers(Path(tokenizer_dir), texts)
    stat = path.stat()
    tok = _load(str(path), stat.st_mtime_ns, stat.st_size)
    from ..encode.local import tokenize_groups  # calls bounded in characters too: long documents

    out: list[int] = []
    for group in tokenize_groups([len(t) for t in texts], max_texts=_BATCH):
        out += [len(e.ids) for e in tok.encode_batch(list(texts[group.start : group.stop]))]
    return out


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int, size: int) -> Any:
    """The fast tokenizer in ``path``, without truncation or padding; loaded once per file version (a run counts
    queries and documents with it)."""
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_file(path)
    except Exception as exc:  # a bad tokenizer file is a model problem, said once
        raise ModelError(
            f"{path}: cannot be read as a fast tokenizer ({type(exc).__name__}: {str(exc)[:160]}); "
            "the slices by length need the model's tokenizer"
        ) from None
    tok.no_truncation()
    tok.no_padding()
    return tok


def _count_with_transformers(tokenizer_dir: Path, texts: Sequence[str]) -> list[int]:
    """A model without ``tokenizer.json`` (a slow tokenizer only): transformers' own tokenizer."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    return [len(ids) for ids in tok(list(texts), truncation=False, padding=False)["input_ids"]]
