"""Gate values: a parsed gate, the scores of one side of a comparison, an outcome; and the shape
of a gate kind's declaration (each kind is one subclass in `kinds.py`, the registry)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from ..errors import SpecError


@dataclass(frozen=True)
class Gate:
    metric: str
    kind: str
    threshold: float
    expr: str
    needs_reference: bool = True


@dataclass(frozen=True)
class Scores:
    """Aggregate and per-query values of one side of a comparison."""

    label: str
    metrics: Mapping[str, float]
    per_query: Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class Outcome:
    gate: Gate
    passed: bool
    candidate: float
    reference: float | None = None
    delta: float | None = None
    p_value: float | None = None
    losers: tuple[tuple[str, float, float], ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {"gate": self.gate.expr, "metric": self.gate.metric, "kind": self.gate.kind,
                "threshold": self.gate.threshold, "passed": self.passed, "candidate": self.candidate,
                "reference": self.reference, "delta": self.delta, "p_value": self.p_value,
                "losers": [list(x) for x in self.losers]}


@dataclass(frozen=True)
class Judgement:
    """What a kind decides from the two sides: pass or not, and the p-value when it tested one."""

    passed: bool
    p_value: float | None = None


def number(text: str, expr: str) -> float:
    """A gate's value: a number, or a percentage (``2%`` is 0.02)."""
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise SpecError(f"gate {expr!r}: {text!r} is not a number") from None


class GateKind:
    """One kind of gate: its syntax, how it reads its value, how it judges, how it explains.

    A relative kind is written ``METRIC:<name>[=VALUE]``; override :meth:`pattern` for another form.
    """

    name: ClassVar[str]
    needs_reference: ClassVar[bool] = True
    form: ClassVar[str]  # the syntax, as help texts and errors show it
    example: ClassVar[str]  # a valid expression
    fails_when: ClassVar[str]  # one line for people, as the README's gate table shows it
    optional_value: ClassVar[str] = ""  # e.g. "[=ALPHA]": shown after the example in the README's table

    def pattern(self) -> re.Pattern[str]:
        return re.compile(rf"^\s*(?P<metric>[^:\s]+)\s*:\s*{self.name}\s*(?:=\s*(?P<value>[-+0-9.eE]+%?))?\s*$")

    def threshold(self, raw: str | None, metric: str, expr: str) -> tuple[float, str]:
        """The threshold and the canonical expression; raise SpecError for a bad value."""
        raise NotImplementedError

    def judge(self, gate: Gate, candidate: Scores, reference: Scores | None, value: float,
              ref_value: float | None) -> Judgement:
        raise NotImplementedError

    def explain(self, outcome: Outcome) -> str:
        """The clause after "metric: reference X, candidate Y, delta Z" (or the whole line for a floor)."""
        raise NotImplementedError
