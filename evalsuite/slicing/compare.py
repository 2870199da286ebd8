"""Per-slice paired comparisons of two sides (A/B, baseline, sweep cell): which slices moved most."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .index import SliceIndex
from .selectors import Selector

if TYPE_CHECKING:
    from ..scoring.stats import Comparison

MIN_COMPARED = 2  # a slice with fewer shared queries has no interval and is left out


@dataclass(frozen=True)
class SliceMove:
    """One slice's delta ``candidate - reference`` of one metric, with its paired bootstrap CI."""

    slice: str
    metric: str
    n_queries: int
    candidate: float
    reference: float
    comparison: Comparison

    def to_dict(self) -> dict[str, object]:
        return {
            "slice": self.slice,
            "metric": self.metric,
            "n_queries": self.n_queries,
            "candidate": round(self.candidate, 6),
            "reference": round(self.reference, 6),
            **self.comparison.to_dict(),
        }


def slice_moves(
    index: SliceIndex,
    candidate: Mapping[str, Mapping[str, float]],
    reference: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str],
    selectors: Sequence[Selector] | None = None,
) -> list[SliceMove]:
    """Every reported slice's paired comparison per metric, largest absolute delta first."""
    return slice_moves_each(index, [candidate], reference, metrics, selectors)[0]


def slice_moves_each(
    index: SliceIndex,
    candidates: Sequence[Mapping[str, Mapping[str, float]]],
    reference: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str],
    selectors: Sequence[Selector] | None = None,
) -> list[list[SliceMove]]:
    """:func:`slice_moves` of each candidate against the same reference (a sweep's cells against its base), the
    same moves bit for bit: every comparison goes through one :func:`~evalsuite.scoring.stats.compare_each`, so
    the slices of one size share their resamples across candidates, slices and metrics."""
    import numpy as np

    from ..scoring.stats import compare_each

    found: list[tuple[int, str, str, int, float, float]] = []  # (candidate, slice, metric, queries, means)
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    for k, candidate in enumerate(candidates):
        for s in index.reported() if selectors is None else selectors:
            qids = index.members(s)
            for m in metrics:
                c, r = candidate.get(m, {}), reference.get(m, {})
                shared = [q for q in qids if q in c and q in r]
                if len(shared) < MIN_COMPARED:
                    continue
                a = np.array([c[q] for q in shared])
                b = np.array([r[q] for q in shared])
                found.append((k, s.text, m, len(shared), float(a.mean()), float(b.mean())))
                pairs.append((a, b))
    out: list[list[SliceMove]] = [[] for _ in candidates]
    for (k, text, m, n, cand_mean, ref_mean), (comparison,) in zip(found, compare_each(pairs), strict=True):
        out[k].append(SliceMove(text, m, n, cand_mean, ref_mean, comparison))
    return [sorted(moves, key=lambda x: (-abs(x.comparison.ci.delta), x.slice, x.metric)) for moves in out]
