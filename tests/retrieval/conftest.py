"""What the retriever tests share: a dataset's texts as a retriever reads them, without the run pipeline."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest

from evalsuite.retrieval.search import Ranking


@dataclass(frozen=True)
class Texts:
    """``RetrievalInputs`` over plain lists (no dense run)."""

    query_ids: Sequence[str]
    queries: Sequence[str]
    doc_ids: Sequence[str]
    docs: Sequence[str]
    corpus_key: str = "test"

    def query_texts(self) -> list[str]:
        return list(self.queries)

    def doc_texts(self) -> Iterator[str]:
        return iter(self.docs)

    def dense(self, k: int) -> Ranking:
        raise AssertionError("no dense run here")


@pytest.fixture(scope="session")
def minibeir_texts(minibeir_dir) -> Texts:
    from evalsuite.datasets import load_dataset

    ds = load_dataset(minibeir_dir, "test")
    return Texts(
        ds.query_ids, [ds.queries[q] for q in ds.query_ids], ds.doc_ids, [ds.corpus[d] for d in ds.doc_ids], "minibeir"
    )
