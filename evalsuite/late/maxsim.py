"""MaxSim: each query token finds its most similar document token; the score is the sum over query tokens.

score(q, d) = sum_i max_j  q_i . d_j      (q: [Lq, dim], d: [Ld, dim])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base.errors import SpecError


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
