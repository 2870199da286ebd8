"""Approximate and quantized indexes: specs (pure), building and searching (FAISS), measuring.

A contract names its index in ``Contract.index`` (canonical text, default ``flat``). Exact flat
search is the ground truth every other index is measured against. Parsing is light; building
and measuring import faiss on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .spec import DEFAULTS, EXPLANATIONS, INDEX_KIND_NAMES, IndexSpec, canonical, parse_index, resolve

if TYPE_CHECKING:
    from .build import BuiltIndex, build
    from .footprint import Footprint, bytes_for, footprint
    from .measure import IndexReport, IndexRun, Latency, evaluate_index

_LAZY = {
    "BuiltIndex": "build",
    "build": "build",
    "Footprint": "footprint",
    "bytes_for": "footprint",
    "footprint": "footprint",
    "IndexReport": "measure",
    "IndexRun": "measure",
    "Latency": "measure",
    "evaluate_index": "measure",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULTS",
    "EXPLANATIONS",
    "INDEX_KIND_NAMES",
    "BuiltIndex",
    "Footprint",
    "IndexReport",
    "IndexRun",
    "IndexSpec",
    "Latency",
    "build",
    "bytes_for",
    "canonical",
    "evaluate_index",
    "footprint",
    "parse_index",
    "resolve",
]
