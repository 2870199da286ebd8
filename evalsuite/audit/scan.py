"""One pass over every stored vector: the structure counts, and the sampled rows' vectors kept for fidelity.

Memory is one block of vectors, the ids (one Arrow string column, :class:`~.idcolumn.IdColumn`: their bytes and
an offset a row, needed to find duplicates and missing chunks) and the sampled rows; the per-row norms are float32
(4 bytes a row).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .idcolumn import IdColumn
from .source import IndexSource


@dataclass(frozen=True)
class Scan:
    """What one pass over the stored rows found."""

    count: int
    dim: int
    ids: IdColumn  # row -> chunk id, storage order
    non_finite: tuple[int, ...]  # rows
    zero: tuple[int, ...]
    norms: np.ndarray  # row -> L2 norm (NaN for a non-finite row)
    sample_rows: np.ndarray  # sorted rows audited for fidelity
    sample_vectors: np.ndarray  # (len(sample_rows), dim) float32
    # row -> a 64-bit hash of its vector (see vector_hashes; 0 for non-finite and zero rows): 8 bytes a row
    hashes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))

    def same_vector(self) -> list[list[int]]:
        """Groups of rows (two or more, in storage order) whose vectors hash alike: one vector (see vector_hashes)."""
        usable = np.flatnonzero(self.hashes != 0)
        if usable.size < 2:
            return []
        order = usable[np.argsort(self.hashes[usable], kind="stable")]
        h = self.hashes[order]
        starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
        ends = np.r_[starts[1:], len(h)]
        return sorted(sorted(order[a:b].tolist()) for a, b in zip(starts, ends, strict=True) if b - a > 1)


def sample_size(share: float, confidence: float, count: int) -> int:
    """The fewest rows, drawn at random, that include a row of a bad share >= ``share`` with ``confidence``
    (drawn with replacement: drawing without, as here, only catches more); at most ``count``."""
    if share >= 1.0:
        return min(1, count)
    return min(count, max(1, math.ceil(math.log(1.0 - confidence) / math.log(1.0 - share))))


def sample_rows(count: int, n: int, seed: int) -> np.ndarray:
    if n >= count:
        return np.arange(count, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(count, size=n, replace=False)).astype(np.int64)


_CACHED_ROWS = 2048  # rows converted to float64 at a time: their copy stays in the CPU cache


def row_norms(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(finite, norm)`` per row of float32 ``v``: whether every value is finite, and the L2 norm in float64 (NaN
    for a row that is not), bit for bit ``np.linalg.norm(v.astype(np.float64), axis=1)`` with the non-finite
    values zeroed, computed a few rows at a time so the float64 copy stays in cache (several times faster)."""
    fin = np.isfinite(v)
    finite = fin.all(axis=1)
    out = np.empty(len(v), np.float64)
    for i in range(0, len(v), _CACHED_ROWS):
        j = min(i + _CACHED_ROWS, len(v))
        x = v[i:j] if finite[i:j].all() else np.where(fin[i:j], v[i:j], 0.0)
        x = x.astype(np.float64)
        np.multiply(x, x, out=x)  # what np.linalg.norm computes: sqrt(add.reduce(x * x, axis=1))
        np.sqrt(np.add.reduce(x, axis=1), out=out[i:j])
    return finite, np.where(finite, out, np.nan)


VECTOR_DECIMALS = 6  # vectors equal to this many decimals are one vector to the collision check
HASHED_DIMS = 32  # the values hashed: the first ones and the norm (a cheap pass; two distinct vectors equal there are
# vanishingly rare, and the collision check re-encodes a group's texts before naming it)


def vector_hashes(v: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's first HASHED_DIMS values and its norm, rounded to VECTOR_DECIMALS decimals (a fixed
    random linear map of their float32 bits, modulo 2**64), never 0; 0 for a non-finite or zero row (``norms`` NaN
    or 0)."""
    head = np.c_[v[:, :HASHED_DIMS], np.where(np.isfinite(norms), norms, 0.0)]
    rounded = np.round(np.where(np.isfinite(head), head, 0.0), VECTOR_DECIMALS).astype(np.float32) + np.float32(0.0)
    bits = rounded.view(np.uint32).astype(np.uint64)
    coefficients = np.random.default_rng(0x5EED).integers(1, 2**63, size=head.shape[1], dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = (bits * (coefficients | np.uint64(1))).sum(axis=1, dtype=np.uint64) | np.uint64(1)
    return np.where(np.isfinite(norms) & (norms > 0), h, np.uint64(0))


def scan(source: IndexSource, rows: np.ndarray, block_rows: int) -> Scan:
    """Stream every stored row once (``source.iter_vectors``), keeping the vectors of ``rows``."""
    ids: list[IdColumn] = []
    non_finite: list[int] = []
    zero: list[int] = []
    norms: list[np.ndarray] = []
    hashes: list[np.ndarray] = []
    kept: list[np.ndarray] = []
    at, dim, want = 0, 0, 0
    for chunk_ids, vectors in source.iter_vectors(block_rows):
        v = np.asarray(vectors, dtype=np.float32)
        n = len(v)
        dim = int(v.shape[1])
        ids.append(IdColumn.of(chunk_ids))
        finite, norm = row_norms(v)
        non_finite += (at + np.flatnonzero(~finite)).tolist()
        zero += (at + np.flatnonzero(finite & (norm == 0))).tolist()
        norms.append(norm.astype(np.float32))
        hashes.append(vector_hashes(v, norm))
        stop = int(np.searchsorted(rows, at + n))
        if stop > want:
            kept.append(v[rows[want:stop] - at].copy())
            want = stop
        at += n
    return Scan(
        count=at,
        dim=dim,
        ids=IdColumn.concat(ids),
        non_finite=tuple(non_finite),
        zero=tuple(zero),
        norms=np.concatenate(norms) if norms else np.zeros(0, np.float32),
        sample_rows=rows[:want],
        sample_vectors=np.vstack(kept) if kept else np.zeros((0, dim), np.float32),
        hashes=np.concatenate(hashes) if hashes else np.zeros(0, np.uint64),
    )
