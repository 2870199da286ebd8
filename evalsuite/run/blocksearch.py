"""Exact search over a stored corpus, block by block, with a per-query top-k merge.

The corpus's vectors stay on disk (:class:`~evalsuite.encode.store.VectorStore`); each block is
finalized (Matryoshka cut, normalization) and searched with :func:`evalsuite.retrieval.search.search`, and the
per-block top ``k`` lists are merged per query. Peak memory is one block plus ``queries x k``
candidates, whatever the corpus size, and the ranking is the one :func:`~evalsuite.retrieval.search.search`
gives over the whole corpus in memory, in its documented tie order (score descending, then document
id descending), also across blocks: each block is searched under stand-in document ids that sort
exactly like the real ones (zero-padded ranks in code-point order), and the merge orders the
candidates by score descending, then that rank descending.

The document ids are never held as Python strings: the ranks are computed once from the ids' UTF-8
bytes (:func:`~evalsuite.datasets.idindex.code_point_ranks`, from the blob of an
:class:`~evalsuite.datasets.idindex.IdIndex` in a chunked run), one integer per document, and only the
``queries x k`` retrieved positions are turned into ids at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..base.errors import ContractError, SpecError
from ..datasets.idindex import code_point_ranks
from ..encode.executors import DEFAULT_BLOCK_ROWS
from ..encode.store import VectorStore
from ..retrieval.search import Ranking, search
from ..retrieval.vectors import finalize


def block_search(
    query_vectors: np.ndarray,
    store: VectorStore,
    *,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    k: int,
    similarity: str,
    dim: int,
    normalize: bool,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    on_block: Callable[[np.ndarray], None] | None = None,
) -> Ranking:
    """The top ``k`` documents per query over the stored (pooled) vectors, finalized to ``dim`` and
    ``normalize`` block by block; the same ranking as :func:`evalsuite.retrieval.search.search` over all of them.
    ``on_block`` sees each finalized block in order (e.g. the integrity check), so each block is read once."""
    n = store.rows
    if n != len(doc_ids):
        raise ContractError(
            f"block search: the store {store.path} holds {n} vectors for {len(doc_ids)} document "
            "ids; delete the store and re-run"
        )
    if k < 1:
        raise SpecError(f"search depth k={k} must be >= 1")
    if block_rows < 1:
        raise SpecError(f"block size {block_rows} must be >= 1")
    qids = [str(q) for q in query_ids]
    k = min(k, n)
    rank = code_point_ranks(doc_ids)  # rank[j]: document j's place in ascending code-point order of the ids
    width = len(str(max(n - 1, 0)))
    nq = len(qids)
    best_s = np.full((nq, k), -np.inf)
    best_r = np.full((nq, k), -1, dtype=np.int64)  # the rank of each candidate (the tie key)
    best_j = np.full((nq, k), -1, dtype=np.int64)  # and its position in the corpus
    for start, stop in store.blocks(block_rows):
        block = finalize(store.read_block(start, stop), dim, normalize)
        if on_block is not None:
            on_block(block)
        ranks = rank[start:stop]
        stand_in = [f"{r:0{width}d}" for r in ranks.tolist()]
        kb = min(k, stop - start)
        part = search(query_vectors, block, query_ids=qids, doc_ids=stand_in, k=kb, similarity=similarity)
        s = np.full((nq, kb), -np.inf)
        r = np.full((nq, kb), -1, dtype=np.int64)
        for qi, qid in enumerate(qids):
            hits = part[qid]
            m = len(hits)
            if m:
                r[qi, :m] = [int(d) for d in hits]
                s[qi, :m] = list(hits.values())
        by_rank = np.argsort(ranks)  # the block's rows in rank order: a rank's row by binary search
        j = start + by_rank[np.searchsorted(ranks, np.maximum(r, 0), sorter=by_rank).clip(0, stop - start - 1)]
        all_s = np.concatenate([best_s, s], axis=1)
        all_r = np.concatenate([best_r, r], axis=1)
        all_j = np.concatenate([best_j, np.where(r >= 0, j, -1)], axis=1)
        # the documented tie order: score descending, then document id descending (larger rank first)
        pick = np.lexsort((-all_r, -all_s), axis=-1)[:, :k]
        best_s = np.take_along_axis(all_s, pick, axis=-1)
        best_r = np.take_along_axis(all_r, pick, axis=-1)
        best_j = np.take_along_axis(all_j, pick, axis=-1)
        del block, part
    docs: dict[str, tuple[str, ...]] = {}
    scores: dict[str, tuple[float, ...]] = {}
    for qi, qid in enumerate(qids):
        keep = np.isfinite(best_s[qi])
        docs[qid] = tuple(str(doc_ids[j]) for j in best_j[qi][keep].tolist())  # only the retrieved ids decoded
        scores[qid] = tuple(best_s[qi][keep].tolist())
    return Ranking(docs, scores, depth=k, corpus_size=n)
