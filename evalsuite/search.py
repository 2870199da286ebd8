"""Exact nearest-neighbour search with FAISS; ties broken deterministically by document id."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .errors import SpecError

Ranking = dict[str, dict[str, float]]
_TIE_MARGIN = 16


def index_kind(similarity: str) -> str:
    kinds = {"cosine": "IndexFlatIP", "dot": "IndexFlatIP", "l2": "IndexFlatL2"}
    if similarity not in kinds:
        raise SpecError(f"similarity {similarity!r} is not valid; choose one of {', '.join(kinds)}")
    return kinds[similarity]


def build_index(doc_vectors: np.ndarray, similarity: str):  # -> faiss.Index
    import faiss

    index = getattr(faiss, index_kind(similarity))(doc_vectors.shape[1])
    index.add(np.ascontiguousarray(doc_vectors, dtype=np.float32))
    return index


def search(query_vectors: np.ndarray, doc_vectors: np.ndarray, *, query_ids: Sequence[str],
           doc_ids: Sequence[str], k: int, similarity: str = "cosine") -> Ranking:
    """Top-``k`` documents per query as {qid: {docid: score}}, best first.

    Scores are similarities (higher is better); for L2 the score is the negated squared
    distance. Documents with equal scores are ordered by id.
    """
    k = min(k, len(doc_ids))
    index = build_index(doc_vectors, similarity)
    fetch = min(k + _TIE_MARGIN, len(doc_ids))
    scores, idx = index.search(np.ascontiguousarray(query_vectors, dtype=np.float32), fetch)
    if similarity == "l2":
        scores = -scores
    out: Ranking = {}
    for qi, qid in enumerate(query_ids):
        hits = [(float(s), doc_ids[j]) for s, j in zip(scores[qi], idx[qi]) if j >= 0]
        hits.sort(key=lambda h: (-h[0], h[1]))
        out[qid] = {did: s for s, did in hits[:k]}
    return out
