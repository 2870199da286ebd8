"""Measure one index against the exact search: recall, latency, build time and memory.

Recall@k follows the ANN-benchmarks definition: ``|ann_topk ∩ exact_topk| / k`` averaged over
queries, where ``exact_topk`` is the exact flat search's top-k (the ground truth) and ``ann_topk``
is a search of the index with depth k. A returned document whose exact similarity ties the k-th
exact one counts as found (which of tied documents is "the" k-th is arbitrary), capped at k.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..search import Ranking, tie_order_key
from .build import BuiltIndex, build, serialized_bytes
from .footprint import ONE_MILLION, bytes_for, footprint
from .spec import IndexSpec, resolve

RECALL_KS = (10, 100)
LATENCY_QUERIES = 200  # single-query searches timed (the first ones)
BATCH_SIZE = 64
MIN_BATCH_SAMPLES = 5
LATENCY_THREADS = 1  # searches are timed on one thread (ANN-benchmarks); building uses them all
_TIE_EPS = 1e-6


@dataclass(frozen=True)
class Latency:
    """Milliseconds per search call: median and 95th percentile over ``samples`` calls."""

    p50_ms: float
    p95_ms: float
    samples: int

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Latency:
        ms = np.asarray(seconds, dtype=np.float64) * 1000.0
        return cls(float(np.percentile(ms, 50)), float(np.percentile(ms, 95)), len(ms))

    def to_dict(self) -> dict[str, float | int]:
        return {"p50_ms": round(self.p50_ms, 4), "p95_ms": round(self.p95_ms, 4), "samples": self.samples}


@dataclass(frozen=True)
class IndexReport:
    """What one index costs and how close it comes to exact search, for one set of vectors."""

    requested: str
    effective: str
    notes: tuple[str, ...]
    similarity: str
    dim: int
    n_vectors: int
    device: str
    threads: int
    build_seconds: float
    recall: Mapping[int, float]
    query_latency: Latency
    batch_latency: Latency
    batch_size: int
    bytes_per_vector: float
    fixed_bytes: int
    rescore_bytes_per_vector: int
    serialized_bytes: int
    bytes_1m_vectors: int

    def to_dict(self) -> dict[str, object]:
        return {
            "requested": self.requested,
            "effective": self.effective,
            "notes": list(self.notes),
            "similarity": self.similarity,
            "dim": self.dim,
            "vectors": self.n_vectors,
            "device": self.device,
            "threads": self.threads,
            "build_seconds": round(self.build_seconds, 4),
            "recall_vs_exact": {f"recall@{k}": round(v, 6) for k, v in self.recall.items()},
            "query_latency": self.query_latency.to_dict(),
            "batch_latency": dict(self.batch_latency.to_dict(), batch_size=self.batch_size),
            "queries_per_second": round(self.queries_per_second, 1),
            "bytes_per_vector": round(self.bytes_per_vector, 2),
            "fixed_bytes": self.fixed_bytes,
            "rescore_bytes_per_vector": self.rescore_bytes_per_vector,
            "serialized_bytes": self.serialized_bytes,
            "bytes_1m_vectors": self.bytes_1m_vectors,
        }

    @property
    def queries_per_second(self) -> float:
        """Throughput at the median batch latency (one thread)."""
        return self.batch_size / (self.batch_latency.p50_ms / 1000.0) if self.batch_latency.p50_ms > 0 else 0.0

    def manifest_entry(self) -> dict[str, object]:
        """The manifest's ``index`` section: what a query service must build to match these results."""
        return {
            "type": self.requested,
            "effective": self.effective,
            "notes": list(self.notes),
            "similarity": self.similarity,
            "dim": self.dim,
            "vectors": self.n_vectors,
            "bytes_per_vector": round(self.bytes_per_vector, 2),
            "device": self.device,
        }


@dataclass(frozen=True)
class IndexRun:
    """The ranking an index returns at the search depth (scored like any run) and its report."""

    ranking: Ranking
    report: IndexReport


def recall_vs_exact(
    built: BuiltIndex,
    queries: np.ndarray,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    exact: Mapping[str, Mapping[str, float]],
    k: int,
) -> float:
    """Mean over queries of the share of the exact top-k that a depth-k search of ``built`` returns."""
    position = {d: i for i, d in enumerate(doc_ids)}
    _, ids = built.search(queries, k)
    true = built.exact_scores(np.ascontiguousarray(queries, dtype=np.float32), ids)
    shares = []
    for qi, qid in enumerate(query_ids):
        top = list(exact[qid].items())[:k]
        if not top:
            continue
        want = {position[d] for d, _ in top}
        kth = top[-1][1]
        found = sum(
            1
            for j, s in zip(ids[qi], true[qi], strict=True)
            if j >= 0 and (int(j) in want or s >= kth - _TIE_EPS * max(1.0, abs(kth)))
        )
        shares.append(min(found, len(top)) / len(top))
    return float(np.mean(shares)) if shares else 0.0


def ranking_of(
    scores: np.ndarray, ids: np.ndarray, query_ids: Sequence[str], doc_ids: Sequence[str], *, depth: int | None = None
) -> Ranking:
    """The index's hits as a :class:`~evalsuite.retrieval.search.Ranking` in the documented tie order (score
    descending, then document id descending); ids of -1 (nothing found) are dropped. Unlike exact
    search, a tie group straddling the depth is cut where the index cut it."""
    docs: dict[str, tuple[str, ...]] = {}
    values: dict[str, tuple[float, ...]] = {}
    for qi, qid in enumerate(query_ids):
        hits = sorted(
            ((str(doc_ids[int(j)]), float(s)) for s, j in zip(scores[qi], ids[qi], strict=True) if j >= 0),
            key=lambda h: tie_order_key(*h),
        )
        docs[str(qid)] = tuple(d for d, _ in hits)
        values[str(qid)] = tuple(v for _, v in hits)
    return Ranking(docs, values, depth=depth, corpus_size=len(doc_ids))


def _latencies(
    built: BuiltIndex, queries: np.ndarray, k: int, latency_queries: int, batch_size: int
) -> tuple[Latency, Latency, int]:
    built.search(queries[:1], k)  # warm-up
    single: list[float] = []
    for i in range(min(latency_queries, len(queries))):
        t0 = time.perf_counter()
        built.search(queries[i : i + 1], k)
        single.append(time.perf_counter() - t0)
    size = max(1, min(batch_size, len(queries)))
    batches = [queries[i : i + size] for i in range(0, len(queries), size)]
    timed: list[float] = []
    while len(timed) < MIN_BATCH_SAMPLES:
        for b in batches:
            t0 = time.perf_counter()
            built.search(b, k)
            timed.append(time.perf_counter() - t0)
    return Latency.of(single), Latency.of(timed), size


def evaluate_index(
    spec: IndexSpec,
    query_vectors: np.ndarray,
    doc_vectors: np.ndarray,
    *,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    similarity: str,
    k: int,
    exact: Mapping[str, Mapping[str, float]],
    recall_ks: Sequence[int] = RECALL_KS,
    latency_queries: int = LATENCY_QUERIES,
    batch_size: int = BATCH_SIZE,
    use_gpu: bool = True,
) -> IndexRun:
    """Build ``spec`` over ``doc_vectors`` (final vectors: dim cut, normalized), search every query
    to depth ``k`` for the ranking, and measure it against ``exact`` (the flat search's ranking of
    the same vectors, at least ``max(recall_ks)`` deep where the corpus allows)."""
    import faiss

    q = np.ascontiguousarray(query_vectors, dtype=np.float32)
    n, d = doc_vectors.shape
    resolved, notes = resolve(spec, n, d)
    built = build(resolved, doc_vectors, similarity, use_gpu=use_gpu)
    scores, ids = built.search(q, k)
    ranking = ranking_of(scores, ids, query_ids, doc_ids, depth=min(k, n))
    recall = {
        kk: recall_vs_exact(built, q, query_ids, doc_ids, exact, min(kk, n))
        for kk in dict.fromkeys(min(r, n) for r in recall_ks)
    }
    threads = int(faiss.omp_get_max_threads())
    faiss.omp_set_num_threads(LATENCY_THREADS)  # ANN-benchmarks times searches on one thread
    try:
        query_latency, batch_latency, size = _latencies(built, q, k, latency_queries, batch_size)
    finally:
        faiss.omp_set_num_threads(threads)
    fp = footprint(resolved, d)
    report = IndexReport(
        requested=spec.text,
        effective=resolved.text,
        notes=notes,
        similarity=similarity,
        dim=d,
        n_vectors=n,
        device=built.device,
        threads=LATENCY_THREADS,
        build_seconds=built.build_seconds,
        recall=recall,
        query_latency=query_latency,
        batch_latency=batch_latency,
        batch_size=size,
        bytes_per_vector=fp.bytes_per_vector,
        fixed_bytes=fp.fixed_bytes,
        rescore_bytes_per_vector=fp.rescore_bytes_per_vector,
        serialized_bytes=serialized_bytes(built),
        bytes_1m_vectors=bytes_for(spec, d, ONE_MILLION),
    )
    return IndexRun(ranking, report)
