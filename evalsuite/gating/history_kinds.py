"""The gate kinds judged against the release history (``--history DIR``): a drop from the first or the best
recorded release, and the trend over the last releases (`releases.py` pairs them with the history). Listed in
``GATE_KINDS`` (`kinds.py`) like every other kind."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from ..base.errors import SpecError
from .gates import TOLERANCE, Drop, Evidence, Gate, Judgement, Outcome, Scores, decided, signed

if TYPE_CHECKING:
    from ..history.anchors import Anchor, Candidate
    from ..history.record import HistoryRecord


class HistoryKind(Drop):
    """A kind judged against earlier releases: it picks the releases it compares with (its anchor) and names them;
    `releases.py` pairs the candidate with the anchor's first release unless the kind judges the anchor itself
    (:meth:`judge_anchor`, as a trend does)."""

    against = "history"
    stage = "first"  # a history record holds the first stage

    def find_anchor(
        self, gate: Gate, records: Sequence[HistoryRecord], candidate: Candidate, pinned: str | None
    ) -> Anchor:
        raise NotImplementedError

    def anchor_label(self, gate: Gate, anchor: Anchor) -> str:
        """How messages name the release(s) the gate compares with (``anchor`` holds at least one)."""
        raise NotImplementedError

    def judge_anchor(self, gate: Gate, candidate: Scores, anchor: Anchor) -> Outcome | None:
        """The outcome judged on the whole anchor; None: pair the candidate with the anchor's first release."""
        return None


class _FromHistory(HistoryKind):
    """A drop against an earlier release in the release history (``--history DIR``), paired query by query, judged
    as ``max_drop`` is."""

    anchor: ClassVar[str]  # "first" or "best": which release (`history/anchors.py`)

    def find_anchor(
        self, gate: Gate, records: Sequence[HistoryRecord], candidate: Candidate, pinned: str | None
    ) -> Anchor:
        from ..history.anchors import best, first

        return best(records, candidate, gate.metric) if self.anchor == "best" else first(records, candidate, pinned)

    def anchor_label(self, gate: Gate, anchor: Anchor) -> str:
        return f"{self.anchor} release {anchor.records[0].revision[:12]}"

    def judge(
        self,
        gate: Gate,
        candidate: Scores,
        reference: Scores | None,
        value: float,
        ref_value: float | None,
        evidence: Evidence,
    ) -> Judgement:
        assert ref_value is not None
        return Judgement.of(ref_value - value <= gate.threshold + TOLERANCE)

    def pass_line(self, threshold: float, reference: float | None) -> float | None:
        return None if reference is None else reference - threshold

    def explain(self, outcome: Outcome) -> str:
        return f"allowed drop {outcome.gate.threshold:g} from the {self.anchor} release (gate {outcome.gate.expr})"


class MaxDropFromFirst(_FromHistory):
    name = "max_drop_from_first"
    anchor = "first"
    form = "METRIC:max_drop_from_first=VALUE"
    example = "ndcg@10:max_drop_from_first=0.02"
    fails_when = (
        "candidate − the first recorded release (or the pinned `history_anchor`) < −0.02: the drift a refreshed "
        "baseline lets through; paired over queries on the same dataset sha256, else INCONCLUSIVE saying why"
    )


class MaxDropFromBest(_FromHistory):
    name = "max_drop_from_best"
    anchor = "best"
    form = "METRIC:max_drop_from_best=VALUE"
    example = "ndcg@10:max_drop_from_best=0.02"
    fails_when = "candidate − the best comparable recorded release < −0.02 (paired over queries)"


DEFAULT_TREND_WINDOW = 5


_WINDOW = re.compile(r"@\s*(\d+)\s*$")  # the @N of a trend gate's expression


def trend_window(gate: Gate) -> int:
    """N of a trend gate ``METRIC:trend=SLOPE@N``: the candidate and the N − 1 releases before it."""
    m = _WINDOW.search(gate.expr)
    return int(m.group(1)) if m else DEFAULT_TREND_WINDOW


class Trend(HistoryKind):
    """The least-squares slope of the metric over the last N releases (the candidate last), per release."""

    name = "trend"
    form = "METRIC:trend=FALL[@N]"
    example = "ndcg@10:trend=0.005"
    optional_value = "@5"
    fails_when = (
        "the slope of the metric over the last N releases (default 5, the candidate last) is shown to fall faster "
        "than 0.005 per release: the two-sided 95% upper bound of the slope (paired bootstrap over queries) is "
        "below −0.005; passes when the one-sided lower bound is ≥ −0.005; otherwise, or with fewer than 3 "
        "comparable releases, INCONCLUSIVE"
    )

    def pattern(self) -> re.Pattern[str]:
        return re.compile(
            r"^\s*(?P<metric>[^:\s]+)\s*:\s*trend\s*(?:=\s*(?P<value>[-+0-9.eE]+%?))?(?:\s*@\s*(?P<window>\d+))?\s*$"
        )

    def threshold(self, raw: str | None, metric: str, expr: str) -> tuple[float, str]:
        value, canonical = super().threshold(raw, metric, expr)
        m = _WINDOW.search(expr)
        if m is None:
            return value, canonical
        if int(m.group(1)) < 3:
            raise SpecError(f"gate {expr!r}: a trend needs a window of at least 3 releases (@3 or more)")
        return value, f"{canonical}@{int(m.group(1))}"

    def judge(
        self,
        gate: Gate,
        candidate: Scores,
        reference: Scores | None,
        value: float,
        ref_value: float | None,
        evidence: Evidence,
    ) -> Judgement:
        assert evidence.comparison is not None
        ci = evidence.comparison.ci
        if ci.lower_bound >= -gate.threshold - TOLERANCE:
            return Judgement("pass")
        if ci.high < -gate.threshold:
            return Judgement("fail")
        return Judgement("inconclusive")

    def explain(self, outcome: Outcome) -> str:
        g, c = outcome.gate, outcome.comparison
        assert c is not None
        bounds = (
            f"slope per release {signed(c.ci.delta)}, two-sided 95% CI {signed(c.ci.low)} .. {signed(c.ci.high)}, "
            f"one-sided lower bound {signed(c.ci.lower_bound)}, against the allowed fall -{g.threshold:g} over "
            f"{trend_window(g)} releases"
        )
        return decided(
            outcome,
            bounds,
            "the metric falls faster than allowed",
            f"neither a fall beyond the allowance nor its absence is shown (MDE {c.mde:.4f})",
        )

    def find_anchor(
        self, gate: Gate, records: Sequence[HistoryRecord], candidate: Candidate, pinned: str | None
    ) -> Anchor:
        from ..history.anchors import window

        return window(records, candidate, trend_window(gate))

    def anchor_label(self, gate: Gate, anchor: Anchor) -> str:
        return f"oldest of {len(anchor.records) + 1} releases ({anchor.records[0].revision[:12]})"

    def judge_anchor(self, gate: Gate, candidate: Scores, anchor: Anchor) -> Outcome | None:
        """The slope over the window's releases and the candidate, with its paired CI."""
        from ..history.trend import MIN_RELEASES, trend

        value = candidate.metrics[gate.metric]
        if gate.selector is not None:
            raise SpecError(f"gate {gate.expr!r}: a trend judges every query; write it without a slice")
        n = len(anchor.records) + 1
        if n < MIN_RELEASES:
            why = f"{n} comparable release(s) in the window, a trend needs {MIN_RELEASES}"
            return Outcome(gate, "inconclusive", value, note=why + (f" ({anchor.note})" if anchor.note else ""))
        series = [r.scores(gate.metric) for r in anchor.records] + [dict(candidate.per_query.get(gate.metric, {}))]
        t = trend(series)
        evidence = Evidence(t.comparison)
        judged = self.judge(gate, candidate, None, value, t.means[0], evidence)
        return Outcome(
            gate, judged.verdict, value, t.means[0], t.comparison.ci.delta, evidence=evidence, note=anchor.note
        )
