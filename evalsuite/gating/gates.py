"""Gate values: a parsed gate, the scores of one side of a comparison, the evidence a comparison
gives (delta with its CI, p-values, MDE), an outcome with its verdict; and the shape of a gate
kind's declaration (each kind is one subclass in `kinds.py`, the registry)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal

from ..base.errors import SpecError
from ..base.verdict import Verdict
from ..rerank.gates import Stage

if TYPE_CHECKING:
    from ..scoring.stats import Comparison
    from ..slicing import SliceIndex

GateVerdict = Verdict  # the one verdict type (evalsuite.base.verdict)
# what a kind pairs the candidate with: the baseline or reference run (same stage), the candidate's own first
# stage (the reranker's gain), or nothing (a floor)
# or earlier releases in the release history (`history/`, the ``*_from_first`` / ``*_from_best`` / ``trend`` kinds)
Against = Literal["reference", "first stage", "history"] | None


@dataclass(frozen=True)
class Gate:
    metric: str
    kind: str
    threshold: float
    expr: str
    needs_reference: bool = True
    selector: str | None = None  # the slice (``topic=finance``) whose queries the gate judges; None: all
    stage: Stage = "first"  # the stage whose scores the gate judges: the first stage, or the reranked one

    @property
    def needs_reranker(self) -> bool:
        return self.stage == "reranked"

    @property
    def bracketed(self) -> str:
        """The metric with the stage and slice it judges: ``ndcg@10``, ``ndcg@10[stage=reranked,topic=x]``."""
        return bracket(self.metric, self.stage, self.selector)

    @property
    def subject(self) -> str:
        """How messages name what the gate judges: ``ndcg@10``, or ``ndcg@10 (reranked stage)``."""
        return self.metric if self.stage == "first" else f"{self.metric} ({self.stage} stage)"


@dataclass(frozen=True)
class Scores:
    """Aggregate and per-query values of one side of a comparison."""

    label: str
    metrics: Mapping[str, float]
    per_query: Mapping[str, Mapping[str, float]]
    slices: SliceIndex | None = None  # slice membership, for gates on a slice (the candidate's side carries it)


@dataclass(frozen=True)
class Evidence:
    """What the paired comparison of the two sides says about one metric, before any kind judges it.

    ``comparison``: delta with its bootstrap CI, the sign-flip p-value and the minimum detectable
    effect (None for a floor); ``p_value``: the kind's own test (ranx's paired t-test for
    ``no_significant_drop``); ``p_adjusted``: that p-value after the session's multiplicity correction.
    """

    comparison: Comparison | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    correction: str | None = None  # "holm" or "none" for a corrected kind; None when the kind tests nothing


@dataclass(frozen=True)
class Outcome:
    gate: Gate
    verdict: GateVerdict
    candidate: float
    reference: float | None = None
    delta: float | None = None
    p_value: float | None = None
    losers: tuple[tuple[str, float, float], ...] = field(default=())
    evidence: Evidence = field(default_factory=Evidence)
    queries_needed: int | None = None  # non_inferior: roughly how many queries would decide an inconclusive one
    note: str | None = None  # a slice gate: why its verdict is what it is (too few queries, CI too wide)
    n_queries: int | None = None  # a slice gate: the slice's queries

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def comparison(self) -> Comparison | None:
        return self.evidence.comparison

    def to_dict(self) -> dict[str, object]:
        c, e = self.comparison, self.evidence
        return {
            "gate": self.gate.expr,
            "metric": self.gate.metric,
            "kind": self.gate.kind,
            "threshold": self.gate.threshold,
            "verdict": self.verdict,
            "passed": self.passed,
            "candidate": self.candidate,
            "reference": self.reference,
            "delta": self.delta,
            "ci": None
            if c is None
            else {
                "low": c.ci.low,
                "high": c.ci.high,
                "lower_bound": c.ci.lower_bound,
                "upper_bound": c.ci.upper_bound,
                "confidence": c.ci.confidence,
                "n_queries": c.ci.n_queries,
                "n_resamples": c.ci.n_resamples,
                "seed": c.ci.seed,
            },
            "mde": None if c is None else c.mde,
            "sign_flip_p": None if c is None else c.p_value,
            "p_value": self.p_value,
            "p_adjusted": e.p_adjusted,
            "correction": e.correction,
            "queries_needed": self.queries_needed,
            "losers": [list(x) for x in self.losers],
            "stage": self.gate.stage,
            "slice": self.gate.selector,
            "slice_queries": self.n_queries,
            "note": self.note,
        }

    def uncertainty(self) -> str:
        """``delta +0.0123 (95% CI -0.0040 .. +0.0290), sign-flip p 0.14, t-test p 0.15, MDE 0.0210``."""
        c = self.comparison
        if c is None:
            return ""
        text = (
            f"delta {signed(c.ci.delta)} ({c.ci.confidence:.0%} CI {signed(c.ci.low)} .. {signed(c.ci.high)}), "
            f"sign-flip p {c.p_value:.3g}"
        )
        if self.p_value is not None:
            text += f", t-test p {self.p_value:.3g}"
            if self.evidence.p_adjusted is not None and self.evidence.correction == "holm":
                text += f" (Holm-adjusted {self.evidence.p_adjusted:.3g})"
        return text + f", MDE {c.mde:.4f} ({c.ci.n_queries} queries)"


@dataclass(frozen=True)
class Judgement:
    """What a kind decides from the two sides, and how many queries would decide an inconclusive one."""

    verdict: GateVerdict
    queries_needed: int | None = None

    @classmethod
    def of(cls, passed: bool) -> Judgement:
        return cls("pass" if passed else "fail")


def bracket(metric: str, stage: Stage | None, selector: str | None) -> str:
    """``metric[stage=reranked,SLICE]``: the brackets hold the stage (unless the first, the default) and the
    slice; none when neither is named."""
    inside = ([f"stage={stage}"] if stage not in (None, "first") else []) + ([selector] if selector else [])
    return metric + (f"[{','.join(inside)}]" if inside else "")


def signed(x: float) -> str:
    """``+0.0123``; never ``-0.0000``."""
    return f"{round(x, 4) + 0.0:+.4f}"


def number(text: str, expr: str) -> float:
    """A gate's value: a number, or a percentage (``2%`` is 0.02)."""
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise SpecError(f"gate {expr!r}: {text!r} is not a number") from None


@dataclass(frozen=True)
class SliceBounds:
    """How a slice's uncertainty decides a kind that judges a point value: the verdict, the bounds, against what."""

    verdict: Verdict
    bounds: str
    against: str


class GateKind:
    """One kind of gate: its syntax, how it reads its value, how it judges, how it explains.

    A relative kind is written ``METRIC:<name>[=VALUE]``; override :meth:`pattern` for another form.
    """

    name: ClassVar[str]
    against: ClassVar[Against] = "reference"
    stage: ClassVar[Stage | None] = None  # the stage a kind always judges (a gate then names none); None: any
    form: ClassVar[str]  # the syntax, as help texts and errors show it
    example: ClassVar[str]  # a valid expression
    fails_when: ClassVar[str]  # one line for people, as the README's gate table shows it
    optional_value: ClassVar[str] = ""  # e.g. "[=ALPHA]": shown after the example in the README's table

    @property
    def needs_reference(self) -> bool:
        """Needs a baseline file or a reference run."""
        return self.against == "reference"

    @property
    def paired(self) -> bool:
        """Judges a paired comparison of two sides (everything but a floor)."""
        return self.against is not None

    def pattern(self) -> re.Pattern[str]:
        return re.compile(rf"^\s*(?P<metric>[^:\s]+)\s*:\s*{self.name}\s*(?:=\s*(?P<value>[-+0-9.eE]+%?))?\s*$")

    def threshold(self, raw: str | None, metric: str, expr: str) -> tuple[float, str]:
        """The threshold and the canonical expression; raise SpecError for a bad value."""
        raise NotImplementedError

    tests_significance: ClassVar[bool] = False  # its p-value joins the session's multiplicity correction

    def p_value(self, gate: Gate, candidate: Scores, reference: Scores) -> float | None:
        """The kind's own test of the two sides (None: the kind tests nothing)."""
        return None

    def judge(
        self,
        gate: Gate,
        candidate: Scores,
        reference: Scores | None,
        value: float,
        ref_value: float | None,
        evidence: Evidence,
    ) -> Judgement:
        raise NotImplementedError

    def pass_line(self, threshold: float, reference: float | None) -> float | None:
        """The lowest value of the metric that passes this gate on a release whose reference value is ``reference``
        (recorded with the release; `evalsuite history` plots it dashed); None: the kind draws no such line."""
        return None

    def explain(self, outcome: Outcome) -> str:
        """The clause after "metric: reference X, candidate Y, delta Z" (or the whole line for a floor)."""
        raise NotImplementedError

    def on_slice(
        self, gate: Gate, candidate: Scores, reference: Scores | None, evidence: Evidence
    ) -> SliceBounds | None:
        """On a slice, a kind that judges a point value is decided by the slice's uncertainty instead (`slices.py`:
        ``floor_on_slice``, ``drop_on_slice``); None (the default): the kind already judges with a test."""
        return None


TOLERANCE = 1e-12  # a value this close to a threshold is on it


def decided(outcome: Outcome, bounds: str, fail: str, inconclusive: str) -> str:
    """The explanation of a kind judged on an interval: its bounds, why it failed or is undecided, the gate."""
    why = {"pass": "", "fail": f": {fail}", "inconclusive": f": {inconclusive}"}[outcome.verdict]
    return f"{bounds}{why} (gate {outcome.gate.expr})"


class Valued(GateKind):
    """A kind whose value is required."""

    def threshold(self, raw: str | None, metric: str, expr: str) -> tuple[float, str]:
        if raw is None:
            raise SpecError(f"gate {expr!r}: {self.name} needs a value, e.g. {metric}:{self.name}=0.01")
        return number(raw, expr), f"{metric}:{self.name}={raw}"


class Drop(Valued):
    """A kind whose value is an allowed drop (>= 0), required."""

    def threshold(self, raw: str | None, metric: str, expr: str) -> tuple[float, str]:
        value, canonical = super().threshold(raw, metric, expr)
        if value < 0:
            raise SpecError(f"gate {expr!r}: the allowed drop must be >= 0")
        return value, canonical
