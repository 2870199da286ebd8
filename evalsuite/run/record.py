"""What a run records besides its metrics: the index manifest, the encoder section, and the per-role encode
timing and counters (snapshots, deltas, counts served from the cache)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .. import __version__
from ..contract import Contract
from ..encode.base import Describing, Encoder, EncodeStats, ExecutorReporting
from ..encode.cache import Caching
from ..retrieval.search import index_kind
from .prepared import Prepared
from .spec import library_versions


def encoder_entry(encoder: Encoder) -> dict[str, object]:
    """The manifest's ``encoder`` section: ``kind`` local (the reference model) or endpoint (a served deployment)."""
    return dict(encoder.manifest_entry()) if isinstance(encoder, Describing) else {"kind": "local"}


def manifest(
    prepared: Prepared, contract: Contract, *, device: str, run_id: str, encoder: dict[str, object] | None = None
) -> dict[str, Any]:
    """The index manifest: what a query service must match to use these vectors (and, when given, the
    ``encoder`` section: who made them)."""
    ident = prepared.dataset.identity
    return {
        **({"encoder": encoder} if encoder is not None else {}),
        "run_id": run_id,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "evalsuite_version": __version__,
        "contract": contract.to_dict(),
        "contract_fingerprint": contract.fingerprint(),
        "model": prepared.model.to_dict(),
        "index": {
            "type": index_kind(contract.similarity),
            "spec": contract.index,
            "similarity": contract.similarity,
            "dim": contract.dim,
            "normalized": contract.normalize,
            "vectors": ident.n_documents,
            "dtype_stored": "float32",
        },
        "dataset": ident.manifest_dict(),
        "device": device,
        "libraries": library_versions(),
    }


def encode_timing(stats_by_role: dict[str, EncodeStats], seconds: float) -> dict[str, object]:
    return {
        "encode_seconds": round(seconds, 4),
        "queries": stats_by_role["query"].to_dict(),
        "documents": stats_by_role["document"].to_dict(),
    }


def add_cached_counts(
    timing: dict[str, Any], served: dict[str, EncodeStats] | None, before: dict[str, EncodeStats]
) -> None:
    """Per role, the texts served from the cache with the token and truncation counts stored when they were
    encoded (``cached_texts``, ``cached_tokens``, ``cached_truncated``): a warm run reports what the cold
    one did without a tokenizer."""
    if served is None:
        return
    for role, name in (("query", "queries"), ("document", "documents")):
        d = served.get(role, EncodeStats()).minus(before.get(role, EncodeStats()))
        timing[name].update(cached_texts=d.texts, cached_tokens=d.tokens, cached_truncated=d.truncated)


def role_stats_since(encoder: Encoder, before: dict[str, EncodeStats]) -> dict[str, EncodeStats]:
    """Per-role counters accumulated since the ``before`` snapshot."""
    return {
        r: encoder.stats_by_role.get(r, EncodeStats()).minus(before.get(r, EncodeStats()))
        for r in ("query", "document")
    }


def stats_snapshot(encoder: Encoder) -> dict[str, EncodeStats]:
    return {r: s.copy() for r, s in encoder.stats_by_role.items()}


_NODE_COUNTERS = ("rows", "seconds", "load_seconds")


def executor_snapshot(encoder: Encoder) -> dict[str, Any]:
    """What an encoder that runs beyond this process (Ray) has done so far; empty for one that runs here."""
    return encoder.executor_report() if isinstance(encoder, ExecutorReporting) else {}


def executor_since(encoder: Encoder, before: dict[str, Any]) -> dict[str, Any] | None:
    """Its timing parts (``timing.executor``) and nodes (``encoder.nodes``) since ``before``: None when it ran nothing
    beyond this process; a node that did nothing in between is left out."""
    after = executor_snapshot(encoder)
    if not after:
        return None
    was = before.get("timing", {})
    timing = {
        k: round(v - was.get(k, 0.0), 4) if isinstance(v, float) else v for k, v in after.get("timing", {}).items()
    }
    old = {n["node_id"]: n for n in before.get("nodes", [])}
    nodes = []
    for node in after.get("nodes", []):
        prev = old.get(node["node_id"], {})
        delta = dict(node, **{k: node[k] - prev.get(k, 0) for k in _NODE_COUNTERS})
        delta["seconds"], delta["load_seconds"] = round(delta["seconds"], 4), round(delta["load_seconds"], 4)
        if delta["rows"] or delta["load_seconds"]:
            nodes.append(delta)
    return {"timing": timing, "nodes": nodes}


@dataclass(frozen=True)
class EncodeWatch:
    """An encoder's counters before a run encodes (:meth:`start`); :meth:`since` turns what they did since into
    the run's ``timing`` (per role, the embedding cache's hits and misses, the texts served from it, a Ray
    executor's parts) and the manifest's ``encoder`` entry (with the nodes that encoded)."""

    encoder: Encoder
    stats: dict[str, EncodeStats]
    served: dict[str, EncodeStats]  # per role, the texts served from the embedding cache so far
    cache_counts: tuple[int, int] | None  # the embedding cache's hits and misses; None: no cache
    executor: dict[str, Any]

    @classmethod
    def start(cls, encoder: Encoder) -> EncodeWatch:
        caching = encoder if isinstance(encoder, Caching) else None
        served = {r: st.copy() for r, st in (caching.cached_by_role if caching is not None else {}).items()}
        counts = (caching.cache_stats.hits, caching.cache_stats.misses) if caching is not None else None
        return cls(encoder, stats_snapshot(encoder), served, counts, executor_snapshot(encoder))

    def since(self, seconds: float) -> tuple[dict[str, object], dict[str, object]]:
        """The timing of the encoding since :meth:`start` (``seconds`` long) and the manifest's encoder entry."""
        encoder = self.encoder
        timing = encode_timing(role_stats_since(encoder, self.stats), seconds)
        caching = encoder if isinstance(encoder, Caching) else None
        if caching is not None and self.cache_counts is not None:
            cache = caching.cache_stats
            hits, misses = self.cache_counts
            timing["cache"] = {"hits": cache.hits - hits, "misses": cache.misses - misses, "corrupt": cache.corrupt}
        add_cached_counts(timing, caching.cached_by_role if caching is not None else None, self.served)
        entry = encoder_entry(encoder)
        executed = executor_since(encoder, self.executor)
        if executed is not None:  # on a Ray cluster: where the time went, which nodes encoded how many rows
            timing["executor"] = executed["timing"]
            entry["nodes"] = executed["nodes"]
        return timing, entry
