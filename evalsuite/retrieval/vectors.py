"""Vector post-processing and checks shared by every encoder: Matryoshka cut, normalization, integrity."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np


def finalize(vectors: np.ndarray, dim: int, normalize: bool) -> np.ndarray:
    """Keep the first ``dim`` dimensions, then L2-normalize if asked (Matryoshka order)."""
    if dim > vectors.shape[1]:
        raise ValueError(f"dim {dim} exceeds the vectors' dimension {vectors.shape[1]}")
    out: np.ndarray = np.ascontiguousarray(vectors[:, :dim], dtype=np.float32)
    if normalize:
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out = out / np.where(norms > 0, norms, 1.0)
    return out.astype(np.float32, copy=False)


@dataclass(frozen=True)
class IntegrityReport:
    n: int
    dim: int
    non_finite: tuple[int, ...]
    zero: tuple[int, ...]
    bad_norm: tuple[int, ...]
    wrong_dim: bool
    min_norm: float
    max_norm: float

    @property
    def ok(self) -> bool:
        return not (self.non_finite or self.zero or self.bad_norm or self.wrong_dim)

    def problems(self, ids: Sequence[str] | None = None) -> list[str]:
        name = (lambda i: ids[i]) if ids else (lambda i: f"#{i}")
        out = []
        if self.wrong_dim:
            out.append(f"dimension is {self.dim}, not the contract's")
        for label, rows in (
            ("non-finite values", self.non_finite),
            ("zero vector", self.zero),
            ("norm not 1", self.bad_norm),
        ):
            if rows:
                shown = ", ".join(name(i) for i in rows[:5])
                out.append(f"{len(rows)} vector(s) with {label}: {shown}{' ...' if len(rows) > 5 else ''}")
        return out


def check_vectors(vectors: np.ndarray, *, dim: int, normalized: bool, tol: float = 1e-3) -> IntegrityReport:
    """Every vector finite, non-zero, of ``dim`` dimensions, and unit-norm when ``normalized``."""
    v = np.asarray(vectors, dtype=np.float64)
    finite = np.isfinite(v).all(axis=1)
    norms = np.where(finite, np.linalg.norm(np.where(np.isfinite(v), v, 0.0), axis=1), np.nan)
    zero = finite & (norms == 0)
    bad = finite & ~zero & (np.abs(norms - 1.0) > tol) if normalized else np.zeros(len(v), bool)
    fn = norms[finite & ~zero]
    return IntegrityReport(
        n=len(v),
        dim=v.shape[1] if v.ndim == 2 else 0,
        non_finite=tuple(int(i) for i in np.flatnonzero(~finite)),
        zero=tuple(int(i) for i in np.flatnonzero(zero)),
        bad_norm=tuple(int(i) for i in np.flatnonzero(bad)),
        wrong_dim=v.ndim != 2 or v.shape[1] != dim,
        min_norm=float(fn.min()) if fn.size else float("nan"),
        max_norm=float(fn.max()) if fn.size else float("nan"),
    )


class BlockChecker:
    """:func:`check_vectors` over consecutive row blocks (a stored corpus) as they go by, row numbers counted
    across blocks: ``add`` each block once (e.g. while it is searched), then ``report``."""

    def __init__(self, *, dim: int, normalized: bool, tol: float = 1e-3) -> None:
        self.dim, self.normalized, self.tol = dim, normalized, tol
        self.n, self.got_dim, self.wrong = 0, dim, False
        self.non_finite: list[int] = []
        self.zero: list[int] = []
        self.bad: list[int] = []
        self.lo, self.hi = float("inf"), float("-inf")

    def add(self, block: np.ndarray) -> None:
        r = check_vectors(block, dim=self.dim, normalized=self.normalized, tol=self.tol)
        n = self.n
        self.non_finite += [n + i for i in r.non_finite]
        self.zero += [n + i for i in r.zero]
        self.bad += [n + i for i in r.bad_norm]
        self.wrong, self.got_dim = self.wrong or r.wrong_dim, r.dim if r.wrong_dim else self.got_dim
        if r.min_norm == r.min_norm:  # not NaN: the block had usable rows
            self.lo, self.hi = min(self.lo, r.min_norm), max(self.hi, r.max_norm)
        self.n += r.n

    def report(self) -> IntegrityReport:
        n = self.n
        return IntegrityReport(
            n=n,
            dim=self.got_dim,
            non_finite=tuple(self.non_finite),
            zero=tuple(self.zero),
            bad_norm=tuple(self.bad),
            wrong_dim=self.wrong,
            min_norm=self.lo if n and self.lo != float("inf") else float("nan"),
            max_norm=self.hi if n and self.hi != float("-inf") else float("nan"),
        )


def check_vector_blocks(
    blocks: Iterable[np.ndarray], *, dim: int, normalized: bool, tol: float = 1e-3
) -> IntegrityReport:
    """:func:`check_vectors` over consecutive row blocks (a stored corpus), row numbers counted across blocks."""
    checker = BlockChecker(dim=dim, normalized=normalized, tol=tol)
    for block in blocks:
        checker.add(block)
    return checker.report()
