"""Uncertainty of a paired comparison over queries, and what it lets a gate conclude.

Every function takes per-query scores of two sides on the same queries, ``cand`` and ``ref``,
shaped ``(n_queries,)`` or ``(n_queries, n_metrics)`` (one column per metric, all metrics share
the same resamples), and looks at the per-query differences ``cand - ref``:

* :func:`paired_bootstrap`: percentile bootstrap over queries of the mean difference, two-sided
  interval and one-sided bounds (seeded; resample ``b`` draws ``n`` query indices with
  replacement, in blocks of ``_BLOCK`` rows from ``numpy.random.default_rng(seed)``);
  :func:`mean_bootstrap` is the same interval of one side's mean (its difference against zero);
* :func:`sign_flip_test`: paired randomization test, two-sided p-value of the mean difference
  (exact enumeration when ``2**n <= n_resamples``, else seeded Monte Carlo with the +1 correction);
* :func:`minimum_detectable_effect` and :func:`queries_needed`: normal-approximation power
  planning from the spread of the differences (one-sided ``alpha``, ``power``);
* :func:`non_inferiority`: pass when the one-sided lower bound of the difference is ``>= -margin``,
  fail when the one-sided upper bound is ``< -margin``, otherwise inconclusive;
* :func:`holm` and :func:`benjamini_hochberg`: adjusted p-values over many tests.

numpy and the standard library only. One module, over 300 lines: the procedures share the difference,
validation and resampling helpers (``_differences``, ``_check``, ``_groups``), and most lines are docstrings.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

from ..base.errors import ContractError, SpecError
from ..base.verdict import Verdict

Decision = Verdict  # the one verdict type (evalsuite.base.verdict)
Margin = float | Sequence[float] | np.ndarray  # one for all metric columns, or one per column
CONFIDENCE = 0.95
N_RESAMPLES = 10_000
POWER = 0.8
_BLOCK = 64  # resamples drawn per block: the count matrix stays in cache; part of the seed logic


@dataclass(frozen=True)
class DeltaCI:
    """Mean difference ``cand - ref`` over queries with its bootstrap uncertainty."""

    delta: float
    low: float  # two-sided interval at ``confidence``
    high: float
    lower_bound: float  # one-sided bounds at ``confidence``: P(true delta >= lower_bound) ~ confidence
    upper_bound: float
    std_error: float  # standard deviation of the bootstrap means
    confidence: float
    n_queries: int
    n_resamples: int
    seed: int

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    """One metric's paired comparison: the interval, a randomization p-value and the detectable effect."""

    ci: DeltaCI
    p_value: float  # two-sided paired sign-flip test
    mde: float  # one-sided minimum detectable effect at alpha = 1 - confidence and ``power``

    def to_dict(self) -> dict[str, object]:
        return {"ci": self.ci.to_dict(), "p_value": self.p_value, "mde": self.mde}


@dataclass(frozen=True)
class NonInferiority:
    """Is ``cand`` at most ``margin`` worse than ``ref``, with the interval's confidence?"""

    decision: Decision
    margin: float
    ci: DeltaCI
    mde: float
    queries_needed: int | None  # roughly how many queries would decide it (None: cannot be decided)

    def to_dict(self) -> dict[str, object]:
        return {
            "decision": self.decision,
            "margin": self.margin,
            "ci": self.ci.to_dict(),
            "mde": self.mde,
            "queries_needed": self.queries_needed,
        }

    def summary(self) -> str:
        c = self.ci
        pct = f"{c.confidence:.0%}"
        text = (
            f"delta {c.delta:+.4f} ({pct} CI {c.low:+.4f} .. {c.high:+.4f}; one-sided {pct} bounds "
            f"{c.lower_bound:+.4f} / {c.upper_bound:+.4f}) against margin -{self.margin:g}: {self.decision}"
        )
        if self.decision == "inconclusive":
            need = f"about {self.queries_needed}" if self.queries_needed is not None else "no finite number of"
            text += (
                f"; minimum detectable effect {self.mde:.4f} with {c.n_queries} queries, {need} queries would decide it"
            )
        return text


def _differences(cand: np.ndarray, ref: np.ndarray) -> np.ndarray:
    a, b = np.asarray(cand, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if a.shape != b.shape or a.ndim not in (1, 2):
        raise ContractError(
            f"paired scores must have the same shape (n_queries,) or (n_queries, n_metrics); "
            f"got {a.shape} and {b.shape}"
        )
    if len(a) == 0:
        raise ContractError("paired scores: no queries to compare")
    d = (a - b).reshape(len(a), -1)
    if not np.isfinite(d).all():
        raise ContractError("paired scores contain NaN or infinity; every query needs a finite score on both sides")
    return d


def _check(confidence: float, n_resamples: int) -> None:
    if not 0.5 < confidence < 1:
        raise SpecError(f"confidence {confidence} must be between 0.5 and 1 (e.g. 0.95)")
    _check_resamples(n_resamples)


def _check_resamples(n_resamples: int) -> None:
    if n_resamples < 1:
        raise SpecError(f"n_resamples {n_resamples} must be >= 1")


def _groups(n_resamples: int, n: int) -> Iterator[tuple[int, list[int]]]:
    """(first resample, block sizes) per group of resamples: random draws go by blocks of ``_BLOCK``
    rows (the seed logic), the matrix product by groups of whole blocks (about 32 MB of float64)."""
    group = _BLOCK * max(1, min(16, (1 << 22) // (n * _BLOCK)))
    for start in range(0, n_resamples, group):
        g = min(group, n_resamples - start)
        yield start, [min(_BLOCK, g - t) for t in range(0, g, _BLOCK)]


def _resample_counts(n: int, n_resamples: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first resample, ``(g, n)`` counts: how often each query is drawn in each of the group's resamples) per
    group, drawn from ``default_rng(seed)`` block by block. The counts depend on ``n``, ``n_resamples`` and
    ``seed`` only; the array is reused by the next group."""
    rng = np.random.default_rng(seed)
    offsets: np.ndarray = np.arange(_BLOCK, dtype=np.uint32 if _BLOCK * n < 2**32 else np.intp)[:, None] * n
    counts = np.empty((0, n))
    for start, blocks in _groups(n_resamples, n):
        g = sum(blocks)
        if counts.shape[0] < g:
            counts = np.empty((g, n), dtype=np.float64)
        row = 0
        for rows in blocks:
            idx = rng.integers(0, n, size=(rows, n), dtype=np.uint32) + offsets[:rows]
            counts[row : row + rows] = np.bincount(idx.ravel(), minlength=rows * n).reshape(rows, n)
            row += rows
        yield start, counts[:g]


def bootstrap_means(d: np.ndarray, *, n_resamples: int = N_RESAMPLES, seed: int = 0) -> np.ndarray:
    """``(n_resamples, n_metrics)`` means of ``d`` (``(n, n_metrics)``) over queries resampled with replacement."""
    return _bootstrap_means_each([d], n_resamples, seed)[0]


def _bootstrap_means_each(ds: Sequence[np.ndarray], n_resamples: int, seed: int) -> list[np.ndarray]:
    """:func:`bootstrap_means` of each of ``ds`` (all with the same number of rows) from one draw of the counts:
    each product is the one its own call computes, so each result is that call's, bit for bit."""
    n = ds[0].shape[0]
    outs = [np.empty((n_resamples, d.shape[1]), dtype=np.float64) for d in ds]
    for start, counts in _resample_counts(n, n_resamples, seed):
        for d, out in zip(ds, outs, strict=True):
            out[start : start + len(counts)] = (counts @ d) / n
    return outs


def paired_bootstrap(
    cand: np.ndarray, ref: np.ndarray, *, n_resamples: int = N_RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
) -> tuple[DeltaCI, ...]:
    """Percentile bootstrap of the mean difference ``cand - ref``, one :class:`DeltaCI` per metric column."""
    _check(confidence, n_resamples)
    d = _differences(cand, ref)
    return _intervals(d, bootstrap_means(d, n_resamples=n_resamples, seed=seed), n_resamples, seed, confidence)


def _intervals(d: np.ndarray, means: np.ndarray, n_resamples: int, seed: int, confidence: float) -> tuple[DeltaCI, ...]:
    """One :class:`DeltaCI` per column of the differences ``d`` from their bootstrap ``means``."""
    a = 1 - confidence
    low, high, lower, upper = np.quantile(means, [a / 2, 1 - a / 2, a, 1 - a], axis=0)
    se = means.std(axis=0, ddof=1) if n_resamples > 1 else np.zeros(d.shape[1])
    delta = d.mean(axis=0)
    return tuple(
        DeltaCI(
            float(delta[j]),
            float(low[j]),
            float(high[j]),
            float(lower[j]),
            float(upper[j]),
            float(se[j]),
            confidence,
            d.shape[0],
            n_resamples,
            seed,
        )
        for j in range(d.shape[1])
    )


def mean_bootstrap(
    values: np.ndarray, *, n_resamples: int = N_RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE
) -> tuple[DeltaCI, ...]:
    """Percentile bootstrap of the mean of ``values`` itself (``(n_queries,)`` or one column per series), one
    :class:`DeltaCI` per column whose ``delta`` is the mean: :func:`paired_bootstrap` against zero, so a slice's
    error bar and a floor gate on the slice come from the same resamples. A column's interval depends on its
    values, ``n_queries`` and ``seed`` only: series stacked in one call get the intervals they get alone."""
    v = np.asarray(values, dtype=np.float64)
    return paired_bootstrap(v, np.zeros_like(v), n_resamples=n_resamples, seed=seed, confidence=confidence)


def sign_flip_test(cand: np.ndarray, ref: np.ndarray, *, n_resamples: int = N_RESAMPLES, seed: int = 0) -> np.ndarray:
    """Two-sided p-values (one per metric column) of the paired randomization test of the mean difference.

    Under the null each per-query difference is as likely to have the other sign. With
    ``2**n <= n_resamples`` every sign vector is enumerated and the p-value is exact; otherwise
    ``n_resamples`` random sign vectors give ``(1 + #{|flipped| >= |observed|}) / (n_resamples + 1)``.
    """
    _check_resamples(n_resamples)
    return _sign_flip_each([_differences(cand, ref)], n_resamples, seed)[0]


def _sign_flip_each(ds: Sequence[np.ndarray], n_resamples: int, seed: int) -> list[np.ndarray]:
    """:func:`sign_flip_test` of each of the differences ``ds`` (all with the same number of rows) from one draw
    of the sign vectors: each product is the one its own call computes, so each p-value is that call's."""
    n = ds[0].shape[0]
    totals = [d.sum(axis=0) for d in ds]
    # equal up to rounding counts as extreme
    thresholds = [np.abs(t) - 1e-10 * np.abs(d).sum(axis=0) for d, t in zip(ds, totals, strict=True)]
    if n < 63 and 2**n <= n_resamples:
        bits = ((np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n)) & 1).astype(np.float64)
        return [
            np.asarray((np.abs(t - 2 * (bits @ d)) >= th).sum(axis=0) / 2**n, dtype=np.float64)
            for d, t, th in zip(ds, totals, thresholds, strict=True)
        ]
    rng = np.random.default_rng(seed)
    extremes = [np.zeros(d.shape[1], dtype=np.int64) for d in ds]
    flips = np.empty((0, n))
    for _start, blocks in _groups(n_resamples, n):
        g = sum(blocks)
        if flips.shape[0] < g:
            flips = np.empty((g, n), dtype=np.float64)
        row = 0
        for rows in blocks:  # 1 flips the sign of that query's difference
            packed = rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8)
            flips[row : row + rows] = np.unpackbits(packed, axis=1, count=n)
            row += rows
        for d, t, th, extreme in zip(ds, totals, thresholds, extremes, strict=True):
            extreme += (np.abs(t - 2 * (flips[:g] @ d)) >= th).sum(axis=0)
    return [np.asarray((1 + e) / (n_resamples + 1), dtype=np.float64) for e in extremes]


def _z(alpha: float, power: float) -> float:
    if not 0 < alpha < 0.5 or not 0.5 <= power < 1:
        raise SpecError(f"alpha {alpha} must be in (0, 0.5) and power {power} in [0.5, 1)")
    return NormalDist().inv_cdf(1 - alpha) + NormalDist().inv_cdf(power)


def minimum_detectable_effect(
    differences: np.ndarray, *, alpha: float = 1 - CONFIDENCE, power: float = POWER
) -> np.ndarray:
    """``(z_(1-alpha) + z_power) * sd / sqrt(n)`` per metric column: the smallest true mean difference a
    one-sided test at ``alpha`` detects with probability ``power`` on this many queries (inf below 2)."""
    d = _differences(differences, np.zeros(np.shape(differences)))
    n = d.shape[0]
    if n < 2:
        return np.full(d.shape[1], np.inf)
    return np.asarray(_z(alpha, power) * d.std(axis=0, ddof=1) / math.sqrt(n), dtype=np.float64)


def queries_needed(
    differences: np.ndarray, margin: Margin, *, alpha: float = 1 - CONFIDENCE, power: float = POWER
) -> np.ndarray:
    """Roughly how many queries would decide ``delta >= -margin`` either way, per metric column.

    Taking the observed mean and spread of the differences as the truth, the one-sided bound sits
    ``|delta + margin|`` away from the margin with probability ``power`` once
    ``n >= ((z_(1-alpha) + z_power) * sd / |delta + margin|)**2``; inf when ``delta == -margin``.
    """
    d = _differences(differences, np.zeros(np.shape(differences)))
    m = _margins(margin, d.shape[1])
    gap = np.abs(d.mean(axis=0) + m)
    sd = d.std(axis=0, ddof=1) if d.shape[0] > 1 else np.zeros(d.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.ceil((_z(alpha, power) * sd / gap) ** 2)
    return np.where(gap > 0, np.maximum(np.nan_to_num(n, nan=2.0), 2.0), np.inf)


def _margins(margin: Margin, n_metrics: int) -> np.ndarray:
    m = (
        np.broadcast_to(np.asarray(margin, dtype=np.float64), (n_metrics,))
        if np.ndim(margin) == 0
        else np.asarray(margin, dtype=np.float64)
    )
    if m.shape != (n_metrics,) or not np.isfinite(m).all() or (m < 0).any():
        raise SpecError(f"non-inferiority margin {margin!r} must be one number >= 0 or one per metric ({n_metrics})")
    return m


def decide(ci: DeltaCI, margin: float) -> Decision:
    """pass: lower bound >= -margin; fail: upper bound < -margin; otherwise inconclusive."""
    if ci.lower_bound >= -margin:
        return "pass"
    if ci.upper_bound < -margin:
        return "fail"
    return "inconclusive"


def non_inferiority(
    cand: np.ndarray,
    ref: np.ndarray,
    *,
    margin: Margin,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    power: float = POWER,
) -> tuple[NonInferiority, ...]:
    """Non-inferiority of ``cand`` against ``ref`` within ``margin``, one verdict per metric column."""
    d = _differences(cand, ref)
    m = _margins(margin, d.shape[1])
    cis = paired_bootstrap(cand, ref, n_resamples=n_resamples, seed=seed, confidence=confidence)
    mde = minimum_detectable_effect(d, alpha=1 - confidence, power=power)
    need = queries_needed(d, m, alpha=1 - confidence, power=power)
    return tuple(
        NonInferiority(
            decide(ci, float(m[j])), float(m[j]), ci, float(mde[j]), int(need[j]) if np.isfinite(need[j]) else None
        )
        for j, ci in enumerate(cis)
    )


def compare(
    cand: np.ndarray,
    ref: np.ndarray,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    power: float = POWER,
) -> tuple[Comparison, ...]:
    """Bootstrap interval, sign-flip p-value and minimum detectable effect, one :class:`Comparison` per column."""
    d = _differences(cand, ref)
    cis = paired_bootstrap(cand, ref, n_resamples=n_resamples, seed=seed, confidence=confidence)
    p = sign_flip_test(cand, ref, n_resamples=n_resamples, seed=seed)
    mde = minimum_detectable_effect(d, alpha=1 - confidence, power=power)
    return tuple(Comparison(ci, float(p[j]), float(mde[j])) for j, ci in enumerate(cis))


def compare_each(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    power: float = POWER,
) -> list[tuple[Comparison, ...]]:
    """``[compare(cand, ref, ...) for cand, ref in pairs]``, the same numbers bit for bit, faster: the resamples
    and sign vectors depend on the number of queries and the seed only, so the pairs with the same number of
    queries share one draw of them (a sweep's slices: one draw per slice size for every cell and metric)."""
    ds = [_differences(cand, ref) for cand, ref in pairs]
    _check(confidence, n_resamples)
    by_size: dict[int, list[int]] = {}
    for i, d in enumerate(ds):
        by_size.setdefault(d.shape[0], []).append(i)
    out: dict[int, tuple[Comparison, ...]] = {}
    for group in by_size.values():
        members = [ds[i] for i in group]
        means = _bootstrap_means_each(members, n_resamples, seed)
        p = _sign_flip_each(members, n_resamples, seed)
        for i, d, bm, pv in zip(group, members, means, p, strict=True):
            cis = _intervals(d, bm, n_resamples, seed, confidence)
            mde = minimum_detectable_effect(d, alpha=1 - confidence, power=power)
            out[i] = tuple(Comparison(ci, float(pv[j]), float(mde[j])) for j, ci in enumerate(cis))
    return [out[i] for i in range(len(ds))]


def paired_scores(
    cand: Mapping[str, Mapping[str, float]], ref: Mapping[str, Mapping[str, float]], metrics: Sequence[str]
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Per-query scores ``{metric: {qid: score}}`` of both sides as aligned ``(n_queries, n_metrics)`` arrays
    over the queries both sides scored for every metric (sorted ids first)."""
    missing = [m for m in metrics if m not in cand or m not in ref]
    if missing:
        raise ContractError(
            f"per-query scores of {', '.join(missing)} are missing on one side; score both sides with the same metrics"
        )
    common = set.intersection(*(set(cand[m]) & set(ref[m]) for m in metrics)) if metrics else set()
    if not common:
        raise ContractError("the two sides share no scored query; they must be evaluated on the same queries")
    qids = tuple(sorted(common))
    a = np.array([[cand[m][q] for m in metrics] for q in qids], dtype=np.float64).reshape(len(qids), len(metrics))
    b = np.array([[ref[m][q] for m in metrics] for q in qids], dtype=np.float64).reshape(len(qids), len(metrics))
    return qids, a, b


def _p_values(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    p = np.asarray(p_values, dtype=np.float64).reshape(-1)
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ContractError(f"p-values must lie in [0, 1]; got {p.tolist()}")
    return p


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (family-wise error), in the input order."""
    p = _p_values(p_values)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


def benjamini_hochberg(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), in the input order."""
    p = _p_values(p_values)
    m = len(p)
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.empty(m)
    out[order] = adjusted
    return out


def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of a binomial share ``k`` of ``n`` (two-sided, 95% by default); (0, 1) for n = 0."""
    if n == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if k == 0 else max(0.0, centre - half)), (1.0 if k == n else min(1.0, centre + half))
