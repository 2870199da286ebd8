"""Latency percentiles and the figures of one load level: requests/s, inputs/s, tokens/s, errors, 429s.

Percentiles use linear interpolation between closest ranks (numpy's default ``linear`` method, also
``statistics.quantiles(method="inclusive")``), so a percentile of one sample is that sample.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..base.errors import SpecError

PERCENTILES = (50, 95, 99)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values`` by linear interpolation; NaN when empty."""
    if not 0 <= q <= 100:
        raise SpecError(f"percentile {q!r} is out of range; it must be in [0, 100]")
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class Sample:
    """One request: which target, level and bucket; what it carried; how long; how it ended."""

    target: str
    concurrency: int
    batch_size: int
    bucket: str
    inputs: int
    tokens: int
    seconds: float
    status: str  # "ok", "429" or "error"
    detail: str = ""


@dataclass(frozen=True)
class Figures:
    """Throughput and latency of a set of requests over ``wall_seconds`` of load."""

    requests: int
    ok: int
    errors: int
    throttled: int
    inputs: int
    tokens: int
    wall_seconds: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float

    @property
    def requests_per_s(self) -> float:
        return self.ok / self.wall_seconds if self.wall_seconds > 0 else math.nan

    @property
    def inputs_per_s(self) -> float:
        return self.inputs / self.wall_seconds if self.wall_seconds > 0 else math.nan

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.wall_seconds if self.wall_seconds > 0 else math.nan

    @property
    def error_rate(self) -> float:
        return (self.errors + self.throttled) / self.requests if self.requests else math.nan

    def value(self, metric: str) -> float:
        """A figure by the name capacity gates and reports use."""
        names = {
            "throughput": self.inputs_per_s,
            "inputs_per_s": self.inputs_per_s,
            "requests_per_s": self.requests_per_s,
            "tokens_per_s": self.tokens_per_s,
            "p50_ms": self.p50_ms,
            "p95_ms": self.p95_ms,
            "p99_ms": self.p99_ms,
            "mean_ms": self.mean_ms,
            "error_rate": self.error_rate,
        }
        if metric not in names:
            raise SpecError(f"unknown load figure {metric!r}; choose one of {', '.join(names)}")
        return float(names[metric])

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "requests": self.requests,
            "ok": self.ok,
            "errors": self.errors,
            "throttled_429": self.throttled,
            "inputs": self.inputs,
            "tokens": self.tokens,
            "wall_seconds": round(self.wall_seconds, 4),
            "requests_per_s": _r(self.requests_per_s),
            "inputs_per_s": _r(self.inputs_per_s),
            "tokens_per_s": _r(self.tokens_per_s),
            "p50_ms": _r(self.p50_ms),
            "p95_ms": _r(self.p95_ms),
            "p99_ms": _r(self.p99_ms),
            "mean_ms": _r(self.mean_ms),
            "error_rate": _r(self.error_rate),
        }


def _r(x: float) -> float | None:
    """Rounded for reports; None (JSON null) where there is no value (no successful request)."""
    return round(x, 3) if math.isfinite(x) else None


def figures(samples: Iterable[Sample], wall_seconds: float) -> Figures:
    """Throughput counts successful requests only; latency percentiles are over successful requests
    (a fast error must not make a deployment look quick). Errors and 429s are counted apart."""
    samples = list(samples)
    ok = [s for s in samples if s.status == "ok"]
    ms = [s.seconds * 1000.0 for s in ok]
    p50, p95, p99 = (percentile(ms, q) for q in PERCENTILES)
    return Figures(
        requests=len(samples),
        ok=len(ok),
        errors=sum(s.status == "error" for s in samples),
        throttled=sum(s.status == "429" for s in samples),
        inputs=sum(s.inputs for s in ok),
        tokens=sum(s.tokens for s in ok),
        wall_seconds=wall_seconds,
        p50_ms=p50,
        p95_ms=p95,
        p99_ms=p99,
        mean_ms=sum(ms) / len(ms) if ms else math.nan,
    )
