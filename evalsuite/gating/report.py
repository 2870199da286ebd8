"""The gate summary: a terminal table (metric, baseline, candidate, delta, verdict) and report.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from ..io import atomic_write_json, atomic_write_text
from ..result import Result
from .markdown import table
from .run_reports import run_markdown


def summary_rows(summary: dict[str, Any], outcomes: Iterable[dict[str, Any]]) -> list[tuple[str, ...]]:
    """One row per metric: reference value, candidate value, delta and the gates' verdict."""
    cand = summary.get("metrics", {})
    ref = summary.get("reference") or {}
    verdicts: dict[str, list[bool]] = {}
    for o in outcomes:
        if o.get("item", "").startswith("gate"):
            verdicts.setdefault(o["metric"], []).append(bool(o["passed"]))
    rows = []
    for metric in dict.fromkeys(list(cand) + list(ref)):
        c, r = cand.get(metric), ref.get(metric)
        v = verdicts.get(metric)
        verdict = "-" if not v else ("PASS" if all(v) else "FAIL")
        delta = "-" if c is None or r is None else f"{round(c - r, 4) + 0.0:+.4f}"
        rows.append((metric, f"{r:.4f}" if r is not None else "-", f"{c:.4f}" if c is not None else "-",
                     delta, verdict))
    return rows


def format_rows(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [line(headers)] + [line(r) for r in rows]


def write_gate_reports(result: Result, out_dir: Path, summary: dict[str, Any], outcomes: list[dict[str, Any]],
                       notes: list[str]) -> None:
    data = result.to_dict()
    data["gates"] = outcomes
    if summary.get("reference"):
        data["reference"] = {"label": summary.get("label"), "metrics": summary["reference"]}
    atomic_write_json(out_dir / "results.json", data)
    label = (summary.get("label") or "baseline").split()[0]
    md = run_markdown(result)
    md += "\n## Gates\n\n" + table(("metric", label, "candidate", "delta", "verdict"), summary_rows(summary, outcomes))
    if outcomes:
        md += "\n" + table(("item", "gate", "passed", "candidate", label, "p-value"), [
            (o["item"], o["gate"], "yes" if o["passed"] else "NO", o["candidate"],
             "-" if o["reference"] is None else o["reference"], "-" if o["p_value"] is None else o["p_value"])
            for o in outcomes])
    if notes:
        md += "\n" + "".join(f"- {n}\n" for n in notes)
    atomic_write_text(out_dir / "report.md", md)
