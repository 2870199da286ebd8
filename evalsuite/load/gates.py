"""Capacity gates for a cutover: ``METRIC:KIND=LIMIT``, compared level by level (batch size x
concurrency) between the old and the new deployment.

    throughput:max_rel_drop=10%     new inputs/s >= old * (1 - 0.10) at every level
    p95_ms:max_rel_rise=20%         new p95 latency <= old * (1 + 0.20) at every level
    error_rate:max_abs_rise=0.01    new (errors + 429s) / requests <= old + 0.01 at every level

A limit is a fraction (``0.1``) or a percentage (``10%``). A limit reached exactly passes. A level
where either side has no finite value (no successful request) makes the gate inconclusive.

They are not kinds of the release gates' family (``GateKind``, ``gating/kinds.py``) and cannot be: a ``GateKind``
judges one retrieval metric of a candidate from its per-query scores (paired bootstrap CIs, per-query evidence,
slices, history anchors, the session's multiplicity correction), in ``gating/`` two layers above this package,
which the load job must not import; a capacity gate compares one summary number per load level (batch size x
concurrency) of two deployments, with no per-query scores to pair and no CI, and its verdict is the worst level's.
Shared with that family is what both answer: the one verdict type (``base/verdict.py``).

Adding a metric: its name in :data:`HIGHER_BETTER` or :data:`LOWER_BETTER` (a field the load level's summary
reports). Adding a kind: one entry in :data:`CAPACITY_GATE_KINDS` (the metrics it takes) and its comparison in
:meth:`CapacityGate.check`; the parser's errors list the registry. Its test: a level that just passes and one that
just fails (``tests/load/test_load_math.py``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..base.errors import SpecError
from ..base.verdict import Verdict, label, of, worst
from .runner import LoadProfile

HIGHER_BETTER = ("throughput", "inputs_per_s", "requests_per_s", "tokens_per_s")
LOWER_BETTER = ("p50_ms", "p95_ms", "p99_ms", "mean_ms", "error_rate")
CAPACITY_GATE_KINDS = {"max_rel_drop": HIGHER_BETTER, "max_rel_rise": LOWER_BETTER, "max_abs_rise": LOWER_BETTER}
DEFAULT_GATES = ("throughput:max_rel_drop=10%", "p95_ms:max_rel_rise=20%", "error_rate:max_abs_rise=0")
_EPS = 1e-9
_SYNTAX = re.compile(r"^\s*([a-z0-9_]+)\s*:\s*([a-z_]+)\s*=\s*([0-9.eE+-]+)\s*(%?)\s*$")


@dataclass(frozen=True)
class CapacityGate:
    metric: str
    kind: str
    limit: float  # a fraction for relative kinds, an absolute amount for max_abs_rise
    expr: str

    def check(self, old: float, new: float) -> tuple[bool | None, float]:
        """(passed, change): the relative change for relative kinds, new - old for max_abs_rise."""
        if not (math.isfinite(old) and math.isfinite(new)):
            return None, math.nan
        if self.kind == "max_abs_rise":
            change = new - old
            return change <= self.limit + _EPS, change
        if old <= 0:
            return None, math.nan
        change = new / old - 1.0
        if self.kind == "max_rel_drop":
            return -change <= self.limit + _EPS, change
        return change <= self.limit + _EPS, change


def parse_capacity_gate(text: str) -> CapacityGate:
    """``throughput:max_rel_drop=10%`` -> a CapacityGate; SpecError saying what is allowed."""
    m = _SYNTAX.match(text)
    example = "e.g. throughput:max_rel_drop=10% or p95_ms:max_rel_rise=20%"
    if not m:
        raise SpecError(f"capacity gate {text!r} is not METRIC:KIND=LIMIT ({example})")
    metric, kind, number, pct = m.groups()
    if kind not in CAPACITY_GATE_KINDS:
        raise SpecError(
            f"capacity gate {text!r}: unknown kind {kind!r}; choose {', '.join(CAPACITY_GATE_KINDS)} ({example})"
        )
    if metric not in HIGHER_BETTER + LOWER_BETTER:
        raise SpecError(
            f"capacity gate {text!r}: unknown metric {metric!r}; choose one of "
            f"{', '.join(HIGHER_BETTER + LOWER_BETTER)}"
        )
    if metric not in CAPACITY_GATE_KINDS[kind]:
        wanted = "max_rel_drop" if metric in HIGHER_BETTER else "max_rel_rise or max_abs_rise"
        raise SpecError(
            f"capacity gate {text!r}: {metric} is {'higher' if metric in HIGHER_BETTER else 'lower'}"
            f"-is-better, so its kind is {wanted}"
        )
    try:
        limit = float(number)
    except ValueError:
        raise SpecError(f"capacity gate {text!r}: {number!r} is not a number ({example})") from None
    limit = limit / 100.0 if pct else limit
    if not math.isfinite(limit) or limit < 0 or (kind == "max_rel_drop" and limit >= 1):
        raise SpecError(
            f"capacity gate {text!r}: the limit must be >= 0" + (" and below 100%" if kind == "max_rel_drop" else "")
        )
    return CapacityGate(metric, kind, limit, f"{metric}:{kind}={number}{pct}")


@dataclass(frozen=True)
class GateOutcome:
    gate: CapacityGate
    verdict: Verdict
    levels: tuple[dict[str, Any], ...]

    @property
    def passed(self) -> bool | None:
        """True, False, or None when inconclusive (as cutover.json has always written it)."""
        return None if self.verdict == "inconclusive" else self.verdict == "pass"

    @property
    def status(self) -> str:
        return label(self.verdict)

    def message(self) -> str:
        bad = [lv for lv in self.levels if lv["passed"] is False] or [lv for lv in self.levels if lv["passed"] is None]
        if not self.levels:
            return f"{self.gate.expr}: no level ran on both targets: nothing to compare"
        if not bad:
            return f"{self.gate.expr}: holds at all {len(self.levels)} level(s)"
        worst = bad[0]
        what = (
            "no finite value on one side"
            if worst["passed"] is None
            else f"{self.gate.metric} {worst['old']:.4g} -> {worst['new']:.4g} ({_change(self.gate, worst)})"
        )
        return (
            f"{self.gate.expr}: {len(bad)} of {len(self.levels)} level(s) "
            f"{'fail' if self.passed is False else 'undecided'}; e.g. batch {worst['batch_size']} x "
            f"{worst['concurrency']}: {what}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate.expr,
            "passed": self.passed,
            "status": self.status,
            "message": self.message(),
            "levels": [
                {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in lv.items()}
                for lv in self.levels
            ],
        }


def _change(gate: CapacityGate, level: dict[str, Any]) -> str:
    c = level["change"]
    return f"{c:+.4g}" if gate.kind == "max_abs_rise" else f"{100 * c:+.1f}%"


def evaluate_gates(gates: tuple[CapacityGate, ...], profile: LoadProfile, old: str, new: str) -> list[GateOutcome]:
    """Each gate at every level both targets ran; it passes when it holds at every level, fails when it
    breaks at one, and is inconclusive otherwise."""
    out = []
    for g in gates:
        rows, verdicts = [], []
        for lv_old in profile.of(old):
            lv_new = profile.level(new, lv_old.batch_size, lv_old.concurrency)
            a, b = lv_old.figures.value(g.metric), lv_new.figures.value(g.metric)
            passed, change = g.check(a, b)
            verdicts.append(of(passed))
            rows.append(
                {
                    "batch_size": lv_old.batch_size,
                    "concurrency": lv_old.concurrency,
                    "old": a,
                    "new": b,
                    "change": change,
                    "passed": passed,
                }
            )
        out.append(GateOutcome(g, worst(verdicts) or "inconclusive", tuple(rows)))
    return out
