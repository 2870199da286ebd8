"""The in-memory labelled retrieval dataset and its identity."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class DatasetIdentity:
    """What a result needs to say which data it was computed on."""

    name: str
    format: str
    split: str
    sha256: str
    files: Mapping[str, str]
    n_documents: int
    n_queries: int
    n_judgements: int
    n_queries_dropped: int
    n_unknown_qrels: int
    n_queries_file: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "format": self.format,
            "split": self.split,
            "sha256": self.sha256,
            "files": dict(self.files),
            "counts": {
                "documents": self.n_documents,
                "queries": self.n_queries,
                "judgements": self.n_judgements,
                "queries_in_file": self.n_queries_file,
                "queries_dropped_no_relevant": self.n_queries_dropped,
                "qrels_unknown_ids": self.n_unknown_qrels,
            },
        }


@dataclass(frozen=True)
class Dataset:
    """Documents and queries by id (in file order) and graded judgements.

    Only queries with at least one relevant (score > 0) judged document are kept.
    """

    corpus: Mapping[str, str]
    queries: Mapping[str, str]
    qrels: Mapping[str, Mapping[str, int]]
    identity: DatasetIdentity
    warnings: tuple[str, ...] = field(default=())

    @property
    def doc_ids(self) -> list[str]:
        return list(self.corpus)

    @property
    def query_ids(self) -> list[str]:
        return list(self.queries)
