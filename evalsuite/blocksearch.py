"""Exact search over a stored corpus, block by block, with a per-query top-k merge.

The corpus's vectors stay on disk (:class:`~evalsuite.encode.store.VectorStore`); each block is
finalized (Matryoshka cut, normalization) and searched with :func:`evalsuite.search.search`, and the
per-block top ``k`` lists are merged per query. Peak memory is one block plus ``queries x k``
candidates, whatever the corpus size, and the ranking is the one :func:`~evalsuite.search.search`
gives over the whole corpus in memory, in its documented tie order (score descending, then document
id descending), also across blocks: each block is searched under stand-in document ids that sort
exactly like the real ones (zero-padded positions in code-point order), and the merge orders the
candidates by score descending, then that position descending.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .encode.executors import DEFAULT_BLOCK_ROWS
from .encode.store import VectorStore
from .errors import ContractError, SpecError
from .search import Ranking, search
from .vectors import finalize


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
) -> Ranking:
    """The top ``k`` documents per query over the stored (pooled) vectors, finalized to ``dim`` and
    ``normalize`` block by block; the same ranking as :func:`evalsuite.search.search` over all of them."""
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
    order = np.argsort(np.array([str(d) for d in doc_ids]), kind="stable")  # code-point order
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    width = len(str(max(n - 1, 0)))
    nq = len(qids)
    best_s = np.full((nq, k), -np.inf)
    best_p = np.full((nq, k), n, dtype=np.int64)
    for start, stop in store.blocks(block_rows):
        block = finalize(store.read_block(start, stop), dim, normalize)
        stand_in = [f"{p:0{width}d}" for p in position[start:stop]]
        kb = min(k, stop - start)
        part = search(query_vectors, block, query_ids=qids, doc_ids=stand_in, k=kb, similarity=similarity)
        s = np.full((nq, kb), -np.inf)
        p = np.full((nq, kb), n, dtype=np.int64)
        for qi, qid in enumerate(qids):
            hits = part[qid]
            m = len(hits)
            if m:
                p[qi, :m] = [int(d) for d in hits]
                s[qi, :m] = list(hits.values())
        all_s = np.concatenate([best_s, s], axis=1)
        all_p = np.concatenate([best_p, p], axis=1)
        # the documented tie order: score descending, then document id descending (larger position first)
        pick = np.lexsort((-all_p, -all_s), axis=-1)[:, :k]
        best_s = np.take_along_axis(all_s, pick, axis=-1)
        best_p = np.take_along_axis(all_p, pick, axis=-1)
        del block, part
    docs: dict[str, tuple[str, ...]] = {}
    scores: dict[str, tuple[float, ...]] = {}
    for qi, qid in enumerate(qids):
        keep = np.isfinite(best_s[qi])
        docs[qid] = tuple(str(doc_ids[j]) for j in order[best_p[qi][keep]])
        scores[qid] = tuple(best_s[qi][keep].tolist())
    return Ranking(docs, scores, depth=k, corpus_size=n)
