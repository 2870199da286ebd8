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

from ..errors import SpecError
from .spec import IndexSpec

GPU_KINDS = ("flat", "ivf", "ivfpq")  # kinds FAISS can move to a GPU as built here (IVF-PQ with 8-bit codes)
SIMILARITIES = ("cosine", "dot", "l2")
_GATHER_FLOATS = 16 * 1024 * 1024  # candidate vector floats gathered at once for exact re-scoring (64 MB)


def _metric(similarity: str) -> int:
    import faiss

    if similarity not in SIMILARITIES:
        raise SpecError(f"similarity {similarity!r} is not valid; choose one of {', '.join(SIMILARITIES)}")
    return int(faiss.METRIC_L2 if similarity == "l2" else faiss.METRIC_INNER_PRODUCT)


def binary_codes(vectors: np.ndarray) -> np.ndarray:
    """Sign bits packed 8 per byte (a dimension > 0 is a 1); the last byte is zero-padded."""
    return np.packbits(np.asarray(vectors) > 0, axis=1)


def _new_index(spec: IndexSpec, d: int, metric: int) -> Any:
    import faiss

    if spec.kind == "flat":
        return faiss.IndexFlat(d, metric)
    index: Any
    if spec.kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, spec.get("M"), metric)
        index.hnsw.efConstruction = spec.get("efc")
        index.hnsw.efSearch = spec.get("ef")
        return index
    if spec.kind == "sq8":
        return faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_8bit, metric)
    quantizer = faiss.IndexFlat(d, metric)
    if spec.kind == "ivf":
        index = faiss.IndexIVFFlat(quantizer, d, spec.get("nlist"), metric)
    elif spec.kind == "ivfpq":
        index = faiss.IndexIVFPQ(quantizer, d, spec.get("nlist"), spec.get("m"), spec.get("nbits"), metric)
    else:
        raise SpecError(f"index kind {spec.kind!r} has no float index")
    index.nprobe = spec.get("nprobe")
    index.__dict__["_evalsuite_quantizer"] = quantizer  # the Python side owns the quantizer: keep it alive
    return index


def _gpu_eligible(spec: IndexSpec) -> bool:
    return spec.kind in GPU_KINDS and not (spec.kind == "ivfpq" and spec.get("nbits") != 8)


@dataclass
class BuiltIndex:
    """A trained, filled index and what searching it needs (the float vectors for re-scoring)."""

    spec: IndexSpec
    similarity: str
    index: Any
    vectors: np.ndarray = field(repr=False)
    build_seconds: float
    device: str
    resources: Any = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return int(self.vectors.shape[0])

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (n queries, k), best first; id -1 where the index found fewer."""
        q = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, self.n)
        fetch = min(max(self.spec.rescore, k), self.n) if self.spec.rescore else k
        if self.spec.kind == "binary":
            dist, ids = self.index.search(binary_codes(q), fetch)
            scores = -dist.astype(np.float32)
        else:
            scores, ids = self.index.search(q, fetch)
            if self.similarity == "l2":
                scores = -scores
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
    (:func:`evalsuite.index.spec.resolve`). Build seconds cover training and adding."""
    import faiss

    x = np.ascontiguousarray(vectors, dtype=np.float32)
    d = x.shape[1]
    metric = _metric(similarity)
    resources = None
    device = "cpu"
    index: Any
    t0 = time.perf_counter()
    if spec.kind == "binary":
        index = faiss.IndexBinaryFlat(8 * ((d + 7) // 8))
        index.add(binary_codes(x))
    else:
        index = _new_index(spec, d, metric)
        if use_gpu and _gpu_eligible(spec) and faiss.get_num_gpus() > 0:  # pragma: no cover - needs faiss-gpu
            resources = faiss.StandardGpuResources()
            index = faiss.index_cpu_to_gpu(resources, 0, index)
            device = "gpu"
        if not index.is_trained:
            index.train(x)
        index.add(x)
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

    if built.spec.kind == "binary":
        return int(faiss.serialize_index_binary(built.index).size)
    index = faiss.index_gpu_to_cpu(built.index) if built.device == "gpu" else built.index
    return int(faiss.serialize_index(index).size)
