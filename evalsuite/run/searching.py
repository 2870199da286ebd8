"""The run's ranking, step by step: a search strategy chosen by the inputs (:func:`search_strategy`), the
contract's index measured against that exact search (:func:`measure_step`), and a retriever other than ``dense``
run over the dataset's texts (:func:`retrieve_step`). :func:`rank` strings the three together;
:func:`evalsuite.run.pipeline.score` times it and scores what it ranked.

The strategies, one per shape of input:

- :func:`search_in_memory`: exact search over document vectors in memory (finalized here, or the result cache's
  finalized copy when it made one);
- :func:`search_block_wise`: exact search over a :class:`~evalsuite.encode.store.VectorStore`, block by block and
  never loaded whole (the same ranking as in memory), the integrity check fed each block as it is searched;
- :func:`search_nothing`: the retriever reads no vectors (``bm25``): it ranks from the texts alone.

A search already done on exactly these inputs is read back from the result cache instead (:func:`from_cache`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from ..base.errors import SpecError
from ..contract import Contract
from ..datasets import Dataset
from ..encode.executors import DEFAULT_BLOCK_ROWS
from ..encode.store import VectorStore
from ..retrieval.retrievers import DENSE, Retrieved
from ..retrieval.search import Ranking, search
from ..retrieval.vectors import BlockChecker, IntegrityReport, finalize
from ..scoring.metrics import search_depth
from .blocksearch import block_search
from .prepared import INDEX_IN_MEMORY
from .retrieve import dense_at, needs_vectors, retrieve

if TYPE_CHECKING:
    from ..retrieval.index.measure import IndexRun
    from .cache.scoring import Scored, ScoringCache
    from .prepared import Prepared


@dataclass(frozen=True)
class SearchInputs:
    """What a search reads: the queries finalized for the contract (dim, normalize), the documents as encoded
    (pooled in memory, or a block-wise store), the metrics (whose deepest cut-off is the search depth)."""

    dataset: Dataset
    contract: Contract
    queries: np.ndarray | None  # None: the retriever reads no vectors
    documents: np.ndarray | VectorStore | None  # None with the queries
    metrics: Sequence[str]
    block_rows: int = DEFAULT_BLOCK_ROWS  # document vectors read per block from a store
    finalized_documents: np.ndarray | None = None  # the result cache's finalized copy: no second one is made

    @property
    def k(self) -> int:
        return search_depth(self.metrics)


def search_inputs(
    dataset: Dataset,
    contract: Contract,
    q_pooled: np.ndarray | None,
    d_pooled: np.ndarray | VectorStore | None,
    metrics: Sequence[str],
    block_rows: int = DEFAULT_BLOCK_ROWS,
) -> SearchInputs:
    """The inputs checked: vectors missing are refused when the contract's retriever reads them (a retriever that
    reads none gets neither); the queries finalized."""
    if q_pooled is None or d_pooled is None:
        if needs_vectors(contract):
            raise SpecError(f"retrieval {contract.retrieval!r} searches the contract's vectors, and none were given")
        q_pooled = d_pooled = None
    qv = finalize(q_pooled, contract.dim, contract.normalize) if q_pooled is not None else None
    return SearchInputs(dataset, contract, qv, d_pooled, metrics, block_rows)


@dataclass(frozen=True)
class Searched:
    """A strategy's ranking (None: nothing searched), the same search at another depth (``research``: None when it
    cannot be repeated), the finalized document vectors in memory and a stored corpus's integrity report."""

    ranking: Ranking | None = None
    research: Callable[[int], Ranking] | None = None
    doc_vectors: np.ndarray | None = None
    doc_integrity: IntegrityReport | None = None


Strategy = Callable[[], Searched]


def search_nothing() -> Searched:
    """The retriever reads no vectors: nothing is searched."""
    return Searched()


def search_in_memory(inputs: SearchInputs, qv: np.ndarray, documents: np.ndarray) -> Searched:
    """Exact search over the document vectors in memory (FAISS, :func:`evalsuite.retrieval.search.search`)."""
    c, ds = inputs.contract, inputs.dataset
    docs = inputs.finalized_documents
    if docs is None:
        docs = finalize(documents, c.dim, c.normalize)

    def exact(depth: int) -> Ranking:
        return search(qv, docs, query_ids=ds.query_ids, doc_ids=ds.doc_ids, k=depth, similarity=c.similarity)

    return Searched(exact(inputs.k), exact, docs)


def search_block_wise(inputs: SearchInputs, qv: np.ndarray, store: VectorStore) -> Searched:
    """Exact search over a document store, ``block_rows`` vectors at a time; the integrity check sees each block as
    it is searched (one read per block). A search at another depth reads the store again."""
    c, ds = inputs.contract, inputs.dataset
    checker = BlockChecker(dim=c.dim, normalized=c.normalize)

    def blocks(depth: int, on_block: Callable[[np.ndarray], None] | None = None) -> Ranking:
        return block_search(
            qv,
            store,
            query_ids=ds.query_ids,
            doc_ids=ds.doc_ids,
            k=depth,
            similarity=c.similarity,
            dim=c.dim,
            normalize=c.normalize,
            block_rows=inputs.block_rows,
            on_block=on_block,
        )

    ranking = blocks(inputs.k, checker.add)
    return Searched(ranking, blocks, doc_integrity=checker.report())


def search_strategy(inputs: SearchInputs) -> Strategy:
    """The strategy for these inputs, ready to call: none when the retriever reads no vectors, block-wise over a
    store, else in memory."""
    qv, docs = inputs.queries, inputs.documents
    if qv is None or docs is None or not needs_vectors(inputs.contract):
        return search_nothing
    if isinstance(docs, VectorStore):
        return partial(search_block_wise, inputs, qv, docs)
    return partial(search_in_memory, inputs, qv, docs)


def measure_index(
    dataset: Dataset,
    contract: Contract,
    query_vectors: np.ndarray,
    doc_vectors: np.ndarray,
    metrics: Sequence[str],
    exact: Mapping[str, Mapping[str, float]],
) -> IndexRun:
    """The contract's index over ``doc_vectors``, searched with ``query_vectors`` at the metrics' depth and measured
    against ``exact``, the flat ranking of the same vectors (the ground truth of its recall)."""
    from ..retrieval.index.measure import evaluate_index
    from ..retrieval.index.spec import parse_index

    return evaluate_index(
        parse_index(contract.index),
        query_vectors,
        doc_vectors,
        query_ids=dataset.query_ids,
        doc_ids=dataset.doc_ids,
        similarity=contract.similarity,
        k=search_depth(metrics),
        exact=exact,
    )


def measure_step(inputs: SearchInputs, searched: Searched) -> tuple[Searched, dict[str, object] | None]:
    """A contract's index other than ``flat`` built and measured against the exact search: its ranking replaces the
    exact one (which cannot be searched again at another depth) and its manifest entry comes back; ``flat`` or
    nothing searched: unchanged, no entry. An index needs the exact search in memory (its ground truth)."""
    c = inputs.contract
    if c.index == "flat" or searched.ranking is None:
        return searched, None
    if searched.doc_vectors is None or inputs.queries is None:
        raise SpecError(INDEX_IN_MEMORY.format(index=c.index))
    index_run = measure_index(inputs.dataset, c, inputs.queries, searched.doc_vectors, inputs.metrics, searched.ranking)
    return replace(searched, ranking=index_run.ranking, research=None), index_run.report.manifest_entry()


def retrieve_step(prepared: Prepared, inputs: SearchInputs, searched: Searched) -> Retrieved | None:
    """A contract's retriever other than ``dense`` run over the dataset's texts (a hybrid fusing ``dense`` reads
    the search above, at any depth); ``dense``: None, the search is the ranking."""
    if inputs.contract.retrieval == DENSE:
        return None
    k = inputs.k
    dense = dense_at(searched.ranking, k, searched.research) if searched.ranking is not None else None
    return retrieve(prepared, inputs.contract, k, dense)


@dataclass(frozen=True)
class Ranked:
    """The run's ranking and how it was made: the search, the index's manifest entry (None: flat or cached) and
    the retriever's output (None: ``dense``, or read back from the result cache)."""

    ranking: Ranking
    searched: Searched
    index_entry: dict[str, object] | None = None
    retrieved: Retrieved | None = None


def rank(prepared: Prepared, inputs: SearchInputs) -> Ranked:
    """Search with the strategy the inputs call for, measure the contract's index, run its retriever."""
    searched = search_strategy(inputs)()
    searched, index_entry = measure_step(inputs, searched)
    retrieved = retrieve_step(prepared, inputs, searched)
    ranking = retrieved.ranking if retrieved is not None else searched.ranking
    if ranking is None:  # pragma: no cover - every strategy but search_nothing ranks, and it goes with a retriever
        raise SpecError(f"retrieval {inputs.contract.retrieval!r} gave no ranking")
    return Ranked(ranking, searched, index_entry, retrieved)


def from_cache(hit: Scored, cache: ScoringCache) -> Ranked:
    """The ranking searched and scored before on exactly these inputs, with the finalized document vectors."""
    return Ranked(hit.ranking, Searched(hit.ranking, doc_vectors=cache.doc_vectors))
