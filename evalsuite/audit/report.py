"""audit.json and report.md (the verdict first, then the worst ids and the diagnosis), and the terminal lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .runner import AuditOutcome, AuditReport


def _head(o: AuditOutcome) -> str:
    i = o.info
    params = ", ".join(f"{k}={v}" for k, v in i.search_params.items())
    return f"{i.store} {i.location} ({i.index_type}{', ' + params if params else ''}; {i.count} vectors, dim {i.dim}, {i.metric})"


def summary_line(report: AuditReport) -> str:
    failed = [f"{o.role}: {c}" for o in report.outcomes for c in o.failed]
    if report.cutover is not None and report.cutover.passed is False:
        failed.append("cutover")
    return "audit: PASS (every check passed)" if report.passed else "audit: FAIL (" + ", ".join(failed) + ")"


def terminal_lines(report: AuditReport) -> list[str]:
    """The summary as report.md leads with it: the verdict, the worst ids and the diagnosis of each index."""
    lines = [summary_line(report)]
    for o in report.outcomes:
        if o.failed:
            worst = ", ".join(
                f"{w['id']} ({w['cosine']:.4f})" for w in o.worst_ids()[:5] if w["cosine"] < o.settings.min_cosine
            )
            if worst:
                lines.append(f"{o.role}: worst ids: {worst}")
            lines += [f"{o.role}: {s}" for s in o.diagnosis_sentences()]
    return lines


def render_markdown(report: AuditReport) -> str:
    from ..reports.markdown import table

    out = [f"# Index audit: {'PASS' if report.passed else 'FAIL'}", "", f"**{summary_line(report)}**", ""]
    for o in report.outcomes:
        worst = [w for w in o.worst_ids() if w["cosine"] < o.settings.min_cosine]
        if worst:
            out += [
                f"Worst ids ({o.role}): "
                + ", ".join(f"`{w['id']}` (row {w['row']}, cosine {w['cosine']:.4f})" for w in worst[:10]),
                "",
            ]
        for s in o.diagnosis_sentences():
            out += [f"- **Diagnosis ({o.role})**: {s}"]
        if o.diagnosis_sentences():
            out.append("")
    if report.cutover is not None:
        out += ["## Cutover", "", f"**{report.cutover.status}**", ""]
        if "gates" in report.cutover.details:
            out += [_gate_table(report.cutover.details["gates"], "old index", "new index", "old", "new"), ""]
    for o in report.outcomes:
        out += [f"## {o.role.capitalize()}: {_head(o)}", ""]
        out.append(
            table(
                ["check", "status", "message"],
                [(v.check, v.status, v.message.replace("\n", " ").replace("|", "\\|")) for v in o.verdicts],
            )
        )
        out.append("")
        r = o.verdict("retrieval")
        if r is not None and "gates" in r.details:
            out += [
                f"### Retrieval through the index (queries encoded by the {r.details['encoded_by']})",
                "",
                _gate_table(r.details["gates"], "reference (exact)", "index (as deployed)", "reference", "index"),
                "",
            ]
        f = o.verdict("fidelity")
        if f is not None and "detection" in f.details:
            out += [f"Detection power: {f.details['detection']['statement']}.", ""]
    return "\n".join(out)


def _num(x: Any, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _gate_table(gates: dict[str, Any], ref_head: str, cand_head: str, ref: str, cand: str) -> str:
    from ..reports.markdown import table

    rows = [
        (
            expr,
            _num(d[ref], ".4f"),
            _num(d[cand], ".4f"),
            _num(d["delta"], "+.4f"),
            f"{d['ci_low']:+.4f} .. {d['ci_high']:+.4f}" if d["ci_low"] is not None else "-",
            d["decision"].upper(),
        )
        for expr, d in gates.items()
    ]
    return table(["gate", ref_head, cand_head, "delta", "95% CI", "verdict"], rows)


def write_reports(report: AuditReport, out: str | Path) -> dict[str, Path]:
    """audit.json and report.md under ``out``, each written atomically."""
    from ..io import atomic_write_json, atomic_write_text

    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    return {
        "json": atomic_write_json(d / "audit.json", report.to_dict()),
        "markdown": atomic_write_text(d / "report.md", render_markdown(report)),
    }
