"""One evaluation, start to end: settings -> contract + dataset -> encode -> search -> score.

The CLI and the pytest plugin both call these functions; neither holds logic the other lacks.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Sequence

import numpy as np

from . import __version__
from .contract import Contract
from .datasets import Dataset, load_dataset
from .encode.base import EncodeStats, Encoder
from .metrics import evaluate as score_metrics
from .metrics import search_depth
from .model import ModelInfo, resolve_model
from .result import Result
from .search import index_kind, search
from .spec import RunSpec, build_contract, default_dataset_dir, library_versions
from .vectors import finalize


@dataclass(frozen=True)
class Prepared:
    """Everything checked and loaded before the first forward pass."""

    spec: RunSpec
    model: ModelInfo
    contract: Contract
    dataset: Dataset


def prepare(spec: RunSpec) -> Prepared:
    """Resolve and pin the model (revision errors come here, before any encoding), load the dataset."""
    info = resolve_model(spec.model, revision=spec.model_rev, tokenizer_revision=spec.tokenizer_rev)
    contract = build_contract(spec, info)
    dataset = load_dataset(spec.dataset or default_dataset_dir(), spec.split, spec.qrels,
                           empty_docs=spec.empty_docs, empty_queries=spec.empty_queries)
    return Prepared(spec, info, contract, dataset)


def make_encoder(prepared: Prepared, *, dtype: str | None = None, max_length: int | None = None) -> Encoder:
    """The local reference encoder for this contract (wrapped by the embedding cache when enabled)."""
    from .encode.local import LocalEncoder

    spec, c = prepared.spec, prepared.contract
    dtype, max_length = dtype or c.dtype, max_length or c.max_length

    def build() -> Encoder:
        return LocalEncoder(prepared.model, dtype=dtype, device=spec.device, max_length=max_length,
                            truncation=c.truncation, batch_size=spec.batch_size,
                            trust_remote_code=spec.trust_remote_code)

    if not spec.use_cache:
        return build()
    from .encode.cache import CachedEncoder, EmbeddingCache

    return CachedEncoder(EmbeddingCache(spec.cache_dir), prepared.model, dtype=dtype, max_length=max_length,
                         truncation=c.truncation, device=spec.device, factory=build)


def encode_dataset(encoder: Encoder, contract: Contract, dataset: Dataset,
                   poolings: Sequence[str]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Pooled, full-dimension query and document vectors per pooling (one forward pass per role)."""
    qids, dids = dataset.query_ids, dataset.doc_ids
    q = encoder.encode(contract.render_all("query", [dataset.queries[i] for i in qids]), poolings=poolings,
                       ids=qids, role="query")
    d = encoder.encode(contract.render_all("document", [dataset.corpus[i] for i in dids]), poolings=poolings,
                       ids=dids, role="document")
    return q, d


def manifest(prepared: Prepared, contract: Contract, *, device: str, run_id: str) -> dict[str, Any]:
    """The index manifest: what a query service must match to use these vectors."""
    ident = prepared.dataset.identity
    return {
        "run_id": run_id,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "evalsuite_version": __version__,
        "contract": contract.to_dict(),
        "contract_fingerprint": contract.fingerprint(),
        "model": prepared.model.to_dict(),
        "index": {"type": index_kind(contract.similarity), "similarity": contract.similarity,
                  "dim": contract.dim, "normalized": contract.normalize, "vectors": ident.n_documents,
                  "dtype_stored": "float32"},
        "dataset": ident.manifest_dict(),
        "device": device,
        "libraries": library_versions(),
    }


def score(prepared: Prepared, contract: Contract, q_pooled: np.ndarray, d_pooled: np.ndarray, *,
          metrics: Sequence[str], timing: dict[str, Any], device: str, run_id: str | None = None,
          keep_vectors: bool = True) -> Result:
    """Finalize vectors for ``contract`` (dim, normalize), search with FAISS, score with ranx."""
    ds = prepared.dataset
    qv = finalize(q_pooled, contract.dim, contract.normalize)
    dv = finalize(d_pooled, contract.dim, contract.normalize)
    t0 = time.perf_counter()
    ranking = search(qv, dv, query_ids=ds.query_ids, doc_ids=ds.doc_ids, k=search_depth(metrics),
                     similarity=contract.similarity)
    t1 = time.perf_counter()
    aggregate, per_query = score_metrics(ds.qrels, ranking, metrics)
    t2 = time.perf_counter()
    timing = dict(timing, search_seconds=round(t1 - t0, 4), score_seconds=round(t2 - t1, 4))
    return Result(contract=contract,
                  manifest=manifest(prepared, contract, device=device, run_id=run_id or uuid.uuid4().hex[:12]),
                  dataset=ds, metrics=aggregate, per_query=per_query, timing=timing, ranking=ranking,
                  query_vectors=qv if keep_vectors else None, doc_vectors=dv if keep_vectors else None,
                  warnings=list(ds.warnings))


def encode_timing(stats_by_role: dict[str, EncodeStats], seconds: float) -> dict[str, Any]:
    return {"encode_seconds": round(seconds, 4),
            "queries": stats_by_role["query"].to_dict(), "documents": stats_by_role["document"].to_dict()}


def run(spec: RunSpec, prepared: Prepared | None = None, encoder: Encoder | None = None) -> Result:
    """Evaluate one contract on one dataset."""
    prepared = prepared or prepare(spec)
    encoder = encoder or make_encoder(prepared)
    c = prepared.contract
    before = stats_snapshot(encoder)
    cache = getattr(encoder, "cache_stats", None)
    hits_before = (cache.hits, cache.misses) if cache is not None else None
    t0 = time.perf_counter()
    q, d = encode_dataset(encoder, c, prepared.dataset, [c.pooling])
    seconds = time.perf_counter() - t0
    timing = encode_timing(role_stats_since(encoder, before), seconds)
    if cache is not None and hits_before is not None:
        timing["cache"] = {"hits": cache.hits - hits_before[0], "misses": cache.misses - hits_before[1],
                           "corrupt": cache.corrupt}
    return score(prepared, c, q[c.pooling], d[c.pooling], metrics=spec.metrics, timing=timing,
                 device=encoder.device)


def role_stats_since(encoder: Encoder, before: dict[str, EncodeStats]) -> dict[str, EncodeStats]:
    """Per-role counters accumulated since the ``before`` snapshot."""
    return {r: encoder.stats_by_role.get(r, EncodeStats()).minus(before.get(r, EncodeStats()))
            for r in ("query", "document")}


def stats_snapshot(encoder: Encoder) -> dict[str, EncodeStats]:
    return {r: s.copy() for r, s in encoder.stats_by_role.items()}
