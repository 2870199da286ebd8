"""The triage checklist: the canary's verdicts and the diagnosis in the order an engineer debugs,
the first broken link marked (a diagnosed cause earlier in the chain than the failing check wins:
CLS pooling breaks "dimension, norm and pooling" before it shows as vector disagreement). Each check's link is
its declaration's ``stage``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..diagnose.hypotheses import STAGES
from .embedding.registry import canary_checks

if TYPE_CHECKING:
    from ..checks import Check, CheckOutcome
    from ..diagnose.score import Diagnosis
    from .sparse.diagnosis import SparseDiagnosis


@dataclass(frozen=True)
class Link:
    stage: str
    title: str
    status: str  # PASS, FAIL, or "-" (not checked)
    evidence: tuple[str, ...]
    first_broken: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "title": self.title,
            "status": self.status,
            "evidence": list(self.evidence),
            "first_broken": self.first_broken,
        }


def checklist(
    verdicts: Sequence[CheckOutcome],
    diagnoses: Sequence[Diagnosis | SparseDiagnosis],
    checks: Sequence[Check[Any]] | None = None,
) -> list[Link]:
    """The chain's links in debugging order, each verdict on its declaration's ``stage`` among ``checks`` (the
    family that gave the verdicts; the embedding canary's by default); a check not declared there, "agreement"."""
    stages = {c.name: c.stage for c in (canary_checks() if checks is None else checks)}
    links: list[Link] = []
    for stage, title in STAGES:
        mine = [v for v in verdicts if stages.get(v.check, "agreement") == stage and v.passed is not None]
        causes = [c for d in diagnoses for c in d.causes if c.stage == stage]
        evidence = [f"{v.check}: {v.status}" for v in mine] + [f"diagnosis: {c.text}" for c in causes]
        broken = bool(causes) or any(v.passed is False for v in mine)
        status = "FAIL" if broken else ("PASS" if mine or _covered(stage, diagnoses) else "-")
        links.append(Link(stage, title, status, tuple(evidence)))
    first = next((i for i, link in enumerate(links) if link.status == "FAIL"), None)
    if first is not None:
        link = links[first]
        links[first] = Link(link.stage, link.title, link.status, link.evidence, first_broken=True)
    return links


def _covered(stage: str, diagnoses: Sequence[Diagnosis | SparseDiagnosis]) -> bool:
    """A diagnosis that explained the vectors tested every stage its hypotheses span and found them sound."""
    return any(d.explained for d in diagnoses) and stage in ("input", "shape", "truncation", "similarity")


def markdown(links: Sequence[Link], diagnoses: Sequence[Diagnosis | SparseDiagnosis]) -> list[str]:
    """report.md's triage section: the checklist, then each diagnosis with its closest alternatives."""
    from ..reports.markdown import table
    from .sparse.diagnosis import SparseDiagnosis

    lines = ["## Triage", ""]
    for n, link in enumerate(links, 1):
        box = {"PASS": "[x]", "FAIL": "[ ]", "-": "[-]"}[link.status]
        mark = " **<- first broken link**" if link.first_broken else ""
        shown = f" ({'; '.join(link.evidence)})" if link.evidence else ""
        lines.append(f"{n}. {box} {link.title}: {link.status}{shown}{mark}")
    lines.append("")
    for d in diagnoses:
        if isinstance(d, SparseDiagnosis):  # the sparse family's: token overlap and weights, not cosines
            lines += d.markdown()
            continue
        lines += [f"### Diagnosis: {d.what}", "", d.sentence(), ""]
        rows = [
            (str(i + 1), f.label, f"{f.min_cosine:.5f}", f"{f.max_difference:.3g}") for i, f in enumerate(d.ranked[:5])
        ]
        rows.append(("contract", d.contract.label, f"{d.contract.min_cosine:.5f}", f"{d.contract.max_difference:.3g}"))
        lines.append(table(["rank", "hypothesis", "min cosine", "max relative difference"], rows))
        if d.not_tested:
            lines += ["", "Not tested: " + "; ".join(d.not_tested)]
        lines.append("")
    return lines
