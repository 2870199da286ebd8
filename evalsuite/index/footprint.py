"""Memory of an index: bytes per vector and fixed bytes (centroids, codebooks), from FAISS's layouts.

The model is checked against :func:`evalsuite.index.build.serialized_bytes` in the tests; it
projects what the same spec costs for one million vectors without building that index.
"""

from __future__ import annotations

from dataclasses import dataclass

from .spec import IndexSpec, resolve

ONE_MILLION = 1_000_000
FLOAT32 = 4
ID_BYTES = 8  # IVF lists store an int64 id beside each code
HNSW_LINK_BYTES = 4  # int32 neighbour ids
HNSW_NODE_BYTES = 4 + 8  # level (int32) and offset (uint64) per node


@dataclass(frozen=True)
class Footprint:
    """``bytes_per_vector`` grows with the corpus, ``fixed_bytes`` does not; ``rescore_bytes_per_vector``
    is the float32 copy that exact re-scoring reads (it may live on disk)."""

    bytes_per_vector: float
    fixed_bytes: int
    rescore_bytes_per_vector: int

    def total(self, n: int) -> int:
        return round(self.bytes_per_vector * n + self.fixed_bytes)


def footprint(spec: IndexSpec, d: int) -> Footprint:
    """Bytes of a resolved ``spec`` over vectors of ``d`` dimensions (HNSW: expected links,
    2M at level 0 plus M/(M-1) above)."""
    rescore = FLOAT32 * d if spec.rescore else 0
    if spec.kind == "flat":
        return Footprint(FLOAT32 * d, 0, rescore)
    if spec.kind == "hnsw":
        m = spec.get("M")
        links = 2 * m + m / (m - 1)
        return Footprint(FLOAT32 * d + HNSW_LINK_BYTES * links + HNSW_NODE_BYTES, 0, rescore)
    if spec.kind == "sq8":
        return Footprint(d, 2 * FLOAT32 * d, rescore)  # per-dimension minimum and range
    if spec.kind == "binary":
        return Footprint((d + 7) // 8, 0, rescore)
    centroids = spec.get("nlist") * d * FLOAT32
    if spec.kind == "ivf":
        return Footprint(FLOAT32 * d + ID_BYTES, centroids, rescore)
    nbits = spec.get("nbits")
    code = (spec.get("m") * nbits + 7) // 8
    return Footprint(code + ID_BYTES, centroids + (2**nbits) * d * FLOAT32, rescore)


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
