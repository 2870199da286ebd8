"""Retrievers: which ranking a contract's run scores (dense vectors, BM25, a fusion of them), one declaration
each in :mod:`.kinds`, named in ``Contract.retrieval`` by the canonical text of :mod:`.spec`. Parsing is light;
bm25s and ranx are imported when a retriever runs."""

from __future__ import annotations

from .kinds import RETRIEVER_NAMES, RETRIEVERS, RetrieverKind, retrieval_param, retriever
from .spec import DENSE, RETRIEVAL_SETTINGS, canonical, parse_retrieval, resolve, with_setting
from .value import RetrievalInputs, RetrievalSpec, Retrieved

__all__ = [
    "DENSE",
    "RETRIEVAL_SETTINGS",
    "RETRIEVERS",
    "RETRIEVER_NAMES",
    "RetrievalInputs",
    "RetrievalSpec",
    "Retrieved",
    "RetrieverKind",
    "canonical",
    "parse_retrieval",
    "resolve",
    "retrieval_param",
    "retriever",
    "with_setting",
]
