"""Builders the test suite shares: a contract with every field set (:func:`make_contract`) and the argv of an
`evalsuite run` (:func:`run_argv`), so a test states only what it changes."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import Any

from ..contract import Contract

CONTRACT_FIELDS: dict[str, Any] = {
    "model": "m",
    "model_revision": "r" * 40,
    "tokenizer_revision": "t" * 40,
    "pooling": "mean",
    "normalize": True,
    "query_prefix": "",
    "doc_prefix": "",
    "dtype": "float32",
    "max_length": 128,
    "truncation": "truncate",
    "dim": 384,
}


def make_contract(**changes: Any) -> Contract:
    """A complete contract (a fake model "m" pinned to 40-hex revisions, mean pooling, normalized, no prefixes,
    float32, max length 128, 384 dimensions) with ``changes`` applied."""
    return Contract(**{**CONTRACT_FIELDS, **changes})


def run_argv(
    model: str | PathLike[str],
    dataset: str | PathLike[str],
    *extra: str,
    command: str | None = "run",
    cache_dir: str | PathLike[str] | None = None,
    out: str | PathLike[str] | None = None,
    device: str = "cpu",
) -> list[str]:
    """``evalsuite COMMAND --model M --dataset D --device cpu`` with the embedding cache in ``cache_dir`` (or
    ``--no-cache``), ``--out`` when given, then ``extra`` (``command=None``: a subcommand's own argv)."""
    cache: Sequence[str] = ("--cache-dir", str(cache_dir)) if cache_dir is not None else ("--no-cache",)
    head = [command] if command is not None else []
    argv = [*head, "--model", str(model), "--dataset", str(dataset), "--device", device, *cache]
    return argv + (["--out", str(out)] if out is not None else []) + list(extra)
