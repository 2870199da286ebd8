"""Exact sparse search: the dot product of sparse query vectors with an inverted (CSR) document matrix, in the
documented tie order of :mod:`.search`.

Each vector is ``(token ids, weights)``. The documents form one ``scipy.sparse`` CSR matrix (documents x
vocabulary: memory grows with the number of stored weights, never with vocabulary x corpus); queries are
multiplied ``block`` at a time, so only the pairs that share a term are ever scored. A document that shares no
term with a query scores 0 and is not retrieved, as an inverted index behaves: a query may hold fewer than ``k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base.errors import ContractError, SpecError
from .search import Ranking, _Desc

SparseVector = tuple[np.ndarray, np.ndarray]


def to_csr(vectors: Sequence[SparseVector], vocab_size: int) -> Any:
    """A CSR matrix (one row per vector) of float64 weights; a token id outside the vocabulary is an error."""
    from scipy.sparse import csr_matrix

    lengths = np.fromiter((len(ids) for ids, _ in vectors), dtype=np.int64, count=len(vectors))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate([ids for ids, _ in vectors]) if len(vectors) else np.empty(0, dtype=np.int64)
    data = np.concatenate([w for _, w in vectors]).astype(np.float64) if len(vectors) else np.empty(0)
    if len(indices) and (indices.min() < 0 or indices.max() >= vocab_size):
        raise ContractError(f"sparse vectors hold token ids outside the vocabulary of {vocab_size} tokens")
    return csr_matrix((data, indices, indptr), shape=(len(vectors), vocab_size))


def sparse_search(
    query_vectors: Sequence[SparseVector],
    doc_vectors: Sequence[SparseVector],
    *,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    vocab_size: int,
    k: int,
    block: int = 1024,
) -> Ranking:
    """The top ``k`` documents of every query by sparse dot product (> 0 only), in the documented tie order."""
    if k < 1:
        raise SpecError(f"search depth k={k} must be >= 1")
    if len(query_ids) != len(query_vectors) or len(doc_ids) != len(doc_vectors):
        raise ContractError("sparse search: one vector per query id and per document id")
    n = len(doc_ids)
    desc_rank = np.empty(n, dtype=np.int64)
    desc_rank[sorted(range(n), key=lambda j: _Desc(str(doc_ids[j])))] = np.arange(n)
    docs_t = to_csr(doc_vectors, vocab_size).T.tocsc()
    docs: dict[str, tuple[str, ...]] = {}
    values: dict[str, tuple[float, ...]] = {}
    qids = [str(q) for q in query_ids]
    for start in range(0, len(qids), block):
        q = to_csr(query_vectors[start : start + block], vocab_size)
        scores = (q @ docs_t).tocsr()
        for row in range(scores.shape[0]):
            lo, hi = scores.indptr[row], scores.indptr[row + 1]
            cand, s = scores.indices[lo:hi], scores.data[lo:hi]
            cand, s = cand[s > 0], s[s > 0]
            order = np.lexsort((desc_rank[cand], -s))[:k]
            qid = qids[start + row]
            docs[qid] = tuple(str(doc_ids[j]) for j in cand[order])
            values[qid] = tuple(float(x) for x in s[order])
    return Ranking(docs, values, depth=min(k, n), corpus_size=n)
