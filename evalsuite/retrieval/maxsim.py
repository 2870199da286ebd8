"""MaxSim: each query token finds its most similar document token; the score is the sum over query tokens.

score(q, d) = sum_i max_j  q_i . d_j      (q: [Lq, dim], d: [Ld, dim])

:func:`maxsim_search` ranks a whole corpus by it (the ``multivector`` retriever's first stage) and
:func:`maxsim_rerank` re-ranks a first stage's top N (its re-ranking form, in the order ``evalsuite late`` ranks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..base.errors import ContractError, SpecError
from .search import Ranking, _Desc, tie_order_key


def maxsim(query: np.ndarray, document: np.ndarray) -> float:
    if query.ndim != 2 or document.ndim != 2 or query.shape[1] != document.shape[1]:
        raise SpecError(f"MaxSim needs [Lq, dim] and [Ld, dim] token matrices; got {query.shape} and {document.shape}")
    if len(query) == 0 or len(document) == 0:
        return 0.0
    sims = query.astype(np.float32) @ document.astype(np.float32).T
    return float(sims.max(axis=1).sum())


def maxsim_many(query: np.ndarray, documents: Sequence[np.ndarray]) -> np.ndarray:
    """MaxSim of one query against several documents (one matrix product over their concatenated tokens)."""
    if not documents:
        return np.zeros(0)
    lengths = [len(d) for d in documents]
    if min(lengths) == 0 or len(query) == 0:
        return np.array([maxsim(query, d) for d in documents])
    sims = query.astype(np.float32) @ np.concatenate(documents).astype(np.float32).T  # [Lq, sum Ld]
    starts = np.cumsum([0, *lengths[:-1]])
    per_doc = np.maximum.reduceat(sims, starts, axis=1)  # [Lq, n_docs]: each query token's best token per document
    result: np.ndarray = per_doc.sum(axis=0).astype(np.float64)
    return result


def maxsim_search(
    query_tokens: Sequence[np.ndarray],
    doc_tokens: Sequence[np.ndarray],
    *,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    k: int,
    block_tokens: int = 1 << 20,
) -> Ranking:
    """The top ``k`` documents of every query by MaxSim over the whole corpus (a first stage), in the documented
    tie order of :mod:`.search`. Documents are scored in blocks of about ``block_tokens`` token rows, each block's
    tokens concatenated once; a document without tokens scores 0."""
    if k < 1:
        raise SpecError(f"search depth k={k} must be >= 1")
    if len(query_ids) != len(query_tokens) or len(doc_ids) != len(doc_tokens):
        raise ContractError("MaxSim search: one token matrix per query id and per document id")
    n = len(doc_ids)
    desc_rank = np.empty(n, dtype=np.int64)
    desc_rank[sorted(range(n), key=lambda j: _Desc(str(doc_ids[j])))] = np.arange(n)
    blocks: list[tuple[int, list[np.ndarray]]] = []  # (first document, its block's matrices)
    start, rows = 0, 0
    for j, m in enumerate(doc_tokens):
        if rows and rows + len(m) > block_tokens:
            blocks.append((start, list(doc_tokens[start:j])))
            start, rows = j, 0
        rows += len(m)
    if start < n:
        blocks.append((start, list(doc_tokens[start:n])))
    docs: dict[str, tuple[str, ...]] = {}
    values: dict[str, tuple[float, ...]] = {}
    for qid, q in zip(query_ids, query_tokens, strict=True):
        scores = np.zeros(n, dtype=np.float64)
        for first, block in blocks:
            scores[first : first + len(block)] = maxsim_many(q, block)
        order = np.lexsort((desc_rank, -scores))[:k]
        docs[str(qid)] = tuple(str(doc_ids[j]) for j in order)
        values[str(qid)] = tuple(float(s) for s in scores[order])
    return Ranking(docs, values, depth=min(k, n), corpus_size=n)


def maxsim_rerank(
    first: Ranking,
    query_tokens: Mapping[str, np.ndarray],
    doc_tokens: Mapping[str, np.ndarray],
    *,
    depth: int,
    k: int,
) -> Ranking:
    """The first stage's top ``depth`` of each query re-ranked by MaxSim, then its remaining documents in their
    first-stage order, ``k`` in all: the order of :mod:`evalsuite.rerank.twostage`. The scores encode that order
    (``n - rank``, as a reranker's do): the MaxSim scores of the top ``depth`` and the first stage's of the rest
    are on different scales."""
    docs: dict[str, tuple[str, ...]] = {}
    values: dict[str, tuple[float, ...]] = {}
    for qid in first:
        candidates = first.top(qid, depth)
        scores = maxsim_many(query_tokens[qid], [doc_tokens[d] for d in candidates])
        head = sorted(zip(candidates, scores.tolist(), strict=True), key=lambda h: tie_order_key(*h))
        order = ([d for d, _ in head] + list(first.top(qid, k)[len(candidates) :]))[:k]
        docs[qid] = tuple(order)
        values[qid] = tuple(float(len(order) - r) for r in range(len(order)))
    return Ranking(
        docs, values, depth=first.depth if first.depth is None else min(k, first.depth), corpus_size=first.corpus_size
    )
