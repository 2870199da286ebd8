"""Build and search one FAISS index for a resolved :class:`IndexSpec` (CPU; a GPU when faiss-gpu has one).

Scores come back higher-is-better for every kind: inner product for cosine and dot, the negated
squared distance for L2, the negated Hamming distance for binary codes. With ``rescore`` the top
``max(R, k)`` candidates are re-scored with the exact similarity of the float vectors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...base.errors import SpecError
from .kinds import binary_codes, index_kind
from .spec import IndexSpec

__all__ = ["SIMILARITIES", "BuiltIndex", "binary_codes", "build", "serialized_bytes"]

SIMILARITIES = ("cosine", "dot", "l2")
_GATHER_FLOATS = 16 * 1024 * 1024  # candidate vector floats gathered at once for exact re-scoring (64 MB)


def _metric(similarity: str) -> int:
    import faiss

    if similarity not in SIMILARITIES:
        raise SpecError(f"similarity {similarity!r} is not valid; choose one of {', '.join(SIMILARITIES)}")
    return int(faiss.METRIC_L2 if similarity == "l2" else faiss.METRIC_INNER_PRODUCT)


@dataclass
class BuiltIndex:
    """A trained, filled index and what searching it needs (the float vectors for re-scoring)."""

    spec: IndexSpec
    similarity: str
    index: Any
    vectors: np.ndarray = field(repr=False)
    build_seconds: float
    device: str
    resources: object = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return int(self.vectors.shape[0])

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (n queries, k), best first; id -1 where the index found fewer."""
        q = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, self.n)
        fetch = min(max(self.spec.rescore, k), self.n) if self.spec.rescore else k
        declared = index_kind(self.spec.kind)
        raw, ids = self.index.search(declared.codes(q), fetch)
        scores = declared.scores(raw, self.similarity)
        if self.spec.rescore:
            scores, ids = self._rescore(q, ids, k)
        return scores, ids

    def exact_scores(self, queries: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The exact similarity (higher is better) of each query to each of its ``ids``; -inf for -1.
        Queries go in blocks so the gathered candidate vectors stay small."""
        out = np.empty(ids.shape, dtype=np.float32)
        block = max(1, _GATHER_FLOATS // max(1, ids.shape[1] * self.vectors.shape[1]))
        for s in range(0, len(ids), block):
            q, i = queries[s : s + block], ids[s : s + block]
            rows = self.vectors[np.where(i >= 0, i, 0)]
            if self.similarity == "l2":
                scores = -np.sum((rows - q[:, None, :]) ** 2, axis=2)
            else:
                scores = np.einsum("qd,qkd->qk", q, rows)
            out[s : s + block] = np.where(i >= 0, scores, -np.inf)
        return out

    def _rescore(self, q: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        exact = self.exact_scores(q, ids)
        order = np.argsort(-exact, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(exact, order, axis=1), np.take_along_axis(ids, order, axis=1)


def build(spec: IndexSpec, vectors: np.ndarray, similarity: str, *, use_gpu: bool = True) -> BuiltIndex:
    """Train (when the kind needs it) and fill an index over ``vectors``; ``spec`` is resolved
    (:func:`evalsuite.retrieval.index.spec.resolve`). Build seconds cover training and adding."""
    import faiss

    x = np.ascontiguousarray(vectors, dtype=np.float32)
    d = x.shape[1]
    metric = _metric(similarity)
    resources = None
    device = "cpu"
    index: Any
    declared = index_kind(spec.kind)
    t0 = time.perf_counter()
    index = declared.make(spec, d, metric)
    if use_gpu and declared.gpu_eligible(spec) and faiss.get_num_gpus() > 0:  # pragma: no cover - needs faiss-gpu
        resources = faiss.StandardGpuResources()
        index = faiss.index_cpu_to_gpu(resources, 0, index)
        device = "gpu"
    codes = declared.codes(x)
    if not index.is_trained:
        index.train(codes)
    index.add(codes)
    seconds = time.perf_counter() - t0
    return BuiltIndex(
        spec=spec,
        similarity=similarity,
        index=index,
        vectors=x,
        build_seconds=seconds,
        device=device,
        resources=resources,
    )


def serialized_bytes(built: BuiltIndex) -> int:
    """The size of the index as FAISS writes it (on CPU)."""
    import faiss

    index = faiss.index_gpu_to_cpu(built.index) if built.device == "gpu" else built.index
    return index_kind(built.spec.kind).serialize(index)
