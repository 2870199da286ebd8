"""`canary.json` and `report.md` of either family, written atomically and redacted. Settings carry the key's
variable name only.

Per-check text comes from the check declarations (each family's ``registry.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.io import atomic_write_json, atomic_write_text
from ..checks import Check
from ..checks.declaration import find
from ..checks.outcome import redacted
from ..reports.markdown import contract_rows, table
from .embedding.registry import canary_checks
from .reranker.settings import RerankCanarySettings
from .runner import SCHEMA_VERSION, CanaryOutcome
from .sparse.settings import SparseCanarySettings

if TYPE_CHECKING:
    from .fleet import FleetOutcome, MemberOutcome


def checks_table(checks: Sequence[Check[Any]] | None = None) -> str:
    """Every check of a family (the embedding canary's by default): name, label, threshold settings, when it
    runs, what it compares (for report.md and docs)."""
    from .embedding.settings import CanarySettings

    checks = canary_checks() if checks is None else checks

    def when(requires: str | None, per_dataset: bool) -> str:
        scope = "every dataset" if per_dataset else "once"
        return scope if requires is None else f"{scope}, with --{CanarySettings.option_of(requires).replace('_', '-')}"

    return table(
        ["check", "label", "thresholds", "runs", "what it compares"],
        [
            (c.name, c.label, ", ".join(c.thresholds) or "-", when(c.requires, c.per_dataset), c.explanation)
            for c in checks
        ],
    )


def render_markdown(outcome: CanaryOutcome) -> str:
    from .runner import family_checks

    s = outcome.settings
    reranker = outcome.family == "reranker"
    served = (
        f"({s.api} API)"
        if isinstance(s, RerankCanarySettings)
        else f"({s.api} sparse shape)"
        if isinstance(s, SparseCanarySettings)
        else f"served model `{outcome.served_model}`,"
    )
    title = {"reranker": "Reranker canary", "sparse": "Sparse canary"}.get(outcome.family, "Canary")
    lines = [
        f"# {title}: {'PASS' if outcome.passed else 'FAIL'}",
        "",
        (
            f"Endpoint `{s.endpoint}` {served} against the local reference "
            f"`{outcome.contract['model']}` @ `{outcome.contract['model_revision'][:16]}` "
            f"on `{outcome.dataset['name']}`."
        ),
        "",
        *(
            [
                f"Every request carried {', '.join(f'`{k}: {json.dumps(v)}`' for k, v in outcome.request_fields.items())}.",
                "",
            ]
            if outcome.request_fields
            else []
        ),
        table(["check", "verdict", "message"], [(v.check, v.status, v.message) for v in outcome.verdicts]),
    ]
    if not outcome.passed:
        from .triage import markdown

        lines += markdown(outcome.triage(), outcome.diagnoses)
    checks = family_checks(outcome.family)
    for v in outcome.verdicts:
        check = find(v.check, checks, outcome.family)
        if check.report is not None:
            lines += check.report(v)
    lines += [
        "## Settings",
        "",
        table(["setting", "value"], [(k, str(val)) for k, val in s.to_dict().items()]),
        "## Reranker contract" if reranker else "## Contract",
        "",
        table(["field", "value"], contract_rows(outcome.contract)),
        "## The checks",
        "",
        checks_table(checks),
    ]
    return "\n".join(lines)


def _rounds_table(rounds: Sequence[CanaryOutcome]) -> str:
    """One row per round: its number, start, verdict and failed checks."""
    return table(
        ["round", "started", "verdict", "failed checks"],
        [(str(k), o.created, "PASS" if o.passed else "FAIL", ", ".join(_failed(o))) for k, o in enumerate(rounds, 1)],
    )


def _failed(outcome: CanaryOutcome) -> list[str]:
    return [v.check for v in outcome.verdicts if v.passed is False]


def rounds_summary(rounds: Sequence[CanaryOutcome]) -> list[dict[str, object]]:
    """One row per canary round (``--rounds``): when it ran, whether it passed, which checks failed."""
    return [
        {
            "round": k,
            "created": o.created,
            "passed": o.passed,
            "failed": _failed(o),
        }
        for k, o in enumerate(rounds, 1)
    ]


def canary_data(outcome: CanaryOutcome, rounds: Sequence[CanaryOutcome] = ()) -> dict[str, Any]:
    """canary.json, every API key redacted (verdicts are already; this is the backstop). With several ``rounds``,
    ``outcome`` is the worst of them: its verdicts are reported in full, every round's summary is added
    (``rounds``), and ``passed`` is False when any round failed."""
    data = outcome.to_dict()
    if len(rounds) > 1:
        summary = rounds_summary(rounds)
        data["rounds"] = summary
        data["passed"] = all(r["passed"] for r in summary)
    return dict(redacted(data))


def write_canary_reports(
    outcome: CanaryOutcome, out: str | Path, rounds: Sequence[CanaryOutcome] = ()
) -> dict[str, Path]:
    """canary.json (:func:`canary_data`) and report.md, every API key redacted from both; with several ``rounds``,
    a Rounds table in report.md too."""
    out = Path(out)
    markdown = render_markdown(outcome)
    if len(rounds) > 1:
        failed = [o for o in rounds if not o.passed]
        markdown += "\n".join(
            [
                "",
                "## Rounds",
                "",
                f"{len(rounds)} rounds, {len(failed)} failed; the verdicts above are the worst round's.",
                "",
                _rounds_table(rounds),
            ]
        )
    return {
        "json": atomic_write_json(out / "canary.json", canary_data(outcome, rounds)),
        "markdown": atomic_write_text(out / "report.md", redacted(markdown)),
    }


def _member_data(m: MemberOutcome) -> dict[str, Any]:
    """One member in a fleet's canary.json: its worst round as a one-URL canary.json holds it, named."""
    data = {k: v for k, v in m.worst.to_dict().items() if k not in ("schema_version", "family")}
    data = {"member": m.index, "of": m.size, **data, "passed": m.passed}
    if len(m.rounds) > 1:
        data["rounds"] = rounds_summary(m.rounds)
    return data


def fleet_data(fleet: FleetOutcome) -> dict[str, Any]:
    """A fleet's canary.json: the members' verdicts each as a one-URL canary.json holds them (``members``),
    which failed, and the detection power per member."""
    first = fleet.members[0].worst
    requests = next((v.details.get("requests") for v in first.verdicts if v.check == "repeated_requests"), None)
    statement = fleet.detection_statement()
    return {
        "schema_version": SCHEMA_VERSION,
        "family": "embedding",
        "created": fleet.created,
        "passed": fleet.passed,
        "endpoints": [m.endpoint for m in fleet.members],
        "failed_members": [m.index for m in fleet.failed_members],
        "detection": None
        if statement is None
        else {"statement": statement, "requests_per_member": requests, "members": len(fleet.members)},
        "contract": first.contract,
        "dataset": first.dataset,
        "members": [_member_data(m) for m in fleet.members],
    }


def _demoted(markdown: str) -> list[str]:
    """A one-URL report.md below a member's heading: its title dropped, every heading one level down."""
    lines = markdown.split("\n")[1:]
    return ["#" + line if line.startswith("#") else line for line in lines]


def render_fleet_markdown(fleet: FleetOutcome) -> str:
    first = fleet.members[0].worst
    rows = [
        (
            str(m.index),
            m.endpoint,
            "PASS" if m.passed else "FAIL",
            ", ".join(m.failed) or "-",
            "; ".join(d.sentence().split(";")[0] for d in m.worst.diagnoses) or "-",
        )
        for m in fleet.members
    ]
    statement = fleet.detection_statement()
    lines = [
        f"# Canary of a fleet of {len(fleet.members)}: {'PASS' if fleet.passed else 'FAIL'}",
        "",
        (
            f"Each member checked on its own against the local reference `{first.contract['model']}` @ "
            f"`{first.contract['model_revision'][:16]}` on `{first.dataset['name']}`; every check runs per member."
        ),
        "",
        table(["member", "endpoint", "verdict", "failed checks", "cause"], rows),
        *([f"Detection power: {statement}.", ""] if statement else []),
    ]
    for m in fleet.members:
        lines += [f"## Member {m.index} of {m.size}: {m.endpoint}: {'PASS' if m.passed else 'FAIL'}", ""]
        lines += _demoted(render_markdown(m.worst))
        if len(m.rounds) > 1:
            lines += [
                "",
                f"{len(m.rounds)} rounds; the verdicts above are this member's worst round's.",
                "",
                _rounds_table(m.rounds),
            ]
        lines.append("")
    return "\n".join(lines)


def write_fleet_reports(fleet: FleetOutcome, out: str | Path) -> dict[str, Path]:
    """A fleet's canary.json and report.md (every member's verdicts, the failing ones named), redacted."""
    out = Path(out)
    return {
        "json": atomic_write_json(out / "canary.json", redacted(fleet_data(fleet))),
        "markdown": atomic_write_text(out / "report.md", redacted(render_fleet_markdown(fleet))),
    }
