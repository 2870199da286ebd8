"""How a session turns evidence into verdicts: the multiplicity correction of its significance-based
gates, and what an inconclusive verdict does to the exit status.

Pure: :func:`judge_all` takes every gate of the session with both sides' scores and returns every
outcome. The session computes it once (``shared.py``), so under pytest-xdist each item reads the
same corrected verdicts whichever worker runs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Literal, get_args

from ..base.errors import EvalsuiteError, SpecError
from .gates import Gate, Outcome, Scores
from .judge import gather_evidence, judge_gate
from .kinds import kind_of
from .ledger import GateRecord, SweepCellRecord

Multiplicity = Literal["holm", "none"]
OnInconclusive = Literal["fail", "xfail", "skip"]
MULTIPLICITY: tuple[str, ...] = get_args(Multiplicity)
ON_INCONCLUSIVE: tuple[str, ...] = get_args(OnInconclusive)


@dataclass(frozen=True)
class VerdictPolicy:
    """``inconclusive``: an inconclusive gate item fails (exit 1), xfails or is skipped (exit 0);
    ``multiplicity``: Holm-Bonferroni over the session's significance-based gates, or none."""

    inconclusive: OnInconclusive = "fail"
    multiplicity: Multiplicity = "holm"

    def __post_init__(self) -> None:
        if self.inconclusive not in ON_INCONCLUSIVE:
            raise SpecError(f"inconclusive {self.inconclusive!r}: choose {', '.join(ON_INCONCLUSIVE)}")
        if self.multiplicity not in MULTIPLICITY:
            raise SpecError(f"multiplicity {self.multiplicity!r}: choose {', '.join(MULTIPLICITY)}")

    @staticmethod
    def default(name: str) -> str:
        return str(next(f.default for f in fields(VerdictPolicy) if f.name == name))

    def statement(self, families: Sequence[tuple[str, int]]) -> str:
        """One line for the terminal summary and report.md: what this policy did.

        ``families``: each family of p-values corrected together (its name, how many p-values it held), as
        judged; an empty family is left out, and a session with no significance-tested gate says so."""
        tested = [(name, n) for name, n in families if n > 0]
        if not tested:
            corr = "no significance-tested gate, so no multiplicity correction"
        else:
            total = sum(n for _, n in tested)
            parts = "; ".join(f"{n} in {name}" for name, n in tested)
            how = "Holm-Bonferroni" if self.multiplicity == "holm" else "no correction"
            alone = ", each family corrected on its own" if len(tested) > 1 and self.multiplicity == "holm" else ""
            other = "none" if self.multiplicity == "holm" else "holm"
            corr = f"{how} over {total} significance test p-value(s) ({parts}{alone}; --multiplicity {other} to change)"
        return (
            f"verdicts: {corr}; an inconclusive gate "
            f"{_DOES[self.inconclusive]} (--inconclusive {'|'.join(ON_INCONCLUSIVE)})"
        )


_DOES = {
    "fail": "fails the run",
    "xfail": "is reported as xfail (exit status unaffected)",
    "skip": "is skipped (exit status unaffected)",
}


@dataclass(frozen=True)
class GateRequest:
    """One gate of the session with both sides; ``key`` names it back to its item."""

    key: str
    gate: Gate
    candidate: Scores
    reference: Scores | None


def judge_all(requests: Sequence[GateRequest], multiplicity: Multiplicity) -> dict[str, Outcome | EvalsuiteError]:
    """Every request's outcome, significance-based p-values corrected together (Holm) first.

    A request whose sides cannot be compared gives its error, so one bad gate does not stop the others."""
    from ..scoring.stats import holm

    out: dict[str, Outcome | EvalsuiteError] = {}
    evidence = {}
    for r in requests:
        try:
            evidence[r.key] = gather_evidence(r.gate, r.candidate, r.reference)
        except EvalsuiteError as exc:
            out[r.key] = exc
    tested = [
        r.key
        for r in requests
        if r.key in evidence and kind_of(r.gate).tests_significance and evidence[r.key].p_value is not None
    ]
    if multiplicity == "holm" and tested:
        adjusted = holm([evidence[k].p_value or 0.0 for k in tested])
        for k, p in zip(tested, adjusted, strict=True):
            evidence[k] = replace(evidence[k], p_adjusted=float(p), correction="holm")
    for r in requests:
        if r.key in evidence:
            try:
                out[r.key] = judge_gate(r.gate, r.candidate, r.reference, evidence[r.key])
            except EvalsuiteError as exc:
                out[r.key] = exc
    return out


def significance_tested(outcome: Outcome) -> bool:
    """Whether this outcome's p-value was one of its family's corrected p-values."""
    return kind_of(outcome.gate).tests_significance and outcome.p_value is not None


def applied_statement(
    policy: VerdictPolicy, outcomes: Mapping[str, Sequence[GateRecord | SweepCellRecord]]
) -> str | None:
    """The verdict policy as it was applied, from the recorded outcomes per dataset: the session's gate items
    are one family of p-values corrected together, each dataset's sweep cells another. None: nothing was gated."""
    if not any(outcomes.values()):
        return None
    items = sum(
        1 for rs in outcomes.values() for r in rs if isinstance(r, GateRecord) and significance_tested(r.outcome)
    )
    families = [("the gate items", items)]
    for name, rs in outcomes.items():
        cells = sum(1 for r in rs if isinstance(r, SweepCellRecord) and significance_tested(r.outcome))
        families.append((f"the sweep cells of {name}", cells))
    return policy.statement(families)
