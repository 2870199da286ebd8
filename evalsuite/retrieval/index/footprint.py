"""Memory of an index: bytes per vector and fixed bytes (centroids, codebooks), from FAISS's layouts.

The model is checked against :func:`evalsuite.retrieval.index.build.serialized_bytes` in the tests; it
projects what the same spec costs for one million vectors without building that index.
"""

from __future__ import annotations

from .kinds import FLOAT32, HNSW_LINK_BYTES, HNSW_NODE_BYTES, ID_BYTES, Footprint, index_kind
from .spec import IndexSpec, resolve

__all__ = [
    "FLOAT32",
    "HNSW_LINK_BYTES",
    "HNSW_NODE_BYTES",
    "ID_BYTES",
    "ONE_MILLION",
    "Footprint",
    "bytes_for",
    "footprint",
    "human_bytes",
]

ONE_MILLION = 1_000_000


def footprint(spec: IndexSpec, d: int) -> Footprint:
    """Bytes of a resolved ``spec`` over vectors of ``d`` dimensions (its kind's declaration)."""
    return index_kind(spec.kind).footprint(spec, d)


def bytes_for(requested: IndexSpec, d: int, n: int = ONE_MILLION) -> int:
    """Bytes of ``requested`` built over ``n`` vectors (resolved for ``n``: no clamping at scale)."""
    resolved, _ = resolve(requested, n, d)
    return footprint(resolved, d).total(n)


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1000
    return f"{n} B"
