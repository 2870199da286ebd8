"""The short Markdown verdict table a reviewer reads in a pull request (``--summary-md FILE``, and appended to
``$GITHUB_STEP_SUMMARY`` when GitHub Actions sets it): each gate's verdict, its delta with the CI, the
queries that lost most, and where the reports and the history are.

Plain data in (:class:`SummaryGate`), Markdown out: the gated session builds the rows (`gating/releases.py`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.verdict import VERDICTS, Verdict, label, worst

STEP_SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
_LOSERS = 3


@dataclass(frozen=True)
class SummaryGate:
    dataset: str
    gate: str
    verdict: Verdict
    against: str | None = None  # "baseline", "first release 1a2b3c4d5e6f", ...
    delta: float | None = None
    low: float | None = None
    high: float | None = None
    losers: tuple[tuple[str, float, float], ...] = ()  # (query id, reference score, candidate score), worst first
    note: str | None = None


def _signed(x: float) -> str:
    return f"{round(x, 4) + 0.0:+.4f}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def summary_markdown(
    gates: Sequence[SummaryGate], *, reports_dir: Path | None, history_dir: Path | None, title: str = "evalsuite"
) -> str:
    """The verdict table; an empty session says that nothing was gated."""
    overall = worst([g.verdict for g in gates])
    if overall is None:
        head = f"### {title}: nothing gated\n\n"
    else:
        counts = ", ".join(
            f"{sum(g.verdict == v for g in gates)} {label(v)}" for v in VERDICTS if any(g.verdict == v for g in gates)
        )
        head = f"### {title}: {label(overall)}\n\n{len(gates)} gate(s): {counts}.\n\n"
    rows = []
    for g in gates:
        delta = "-" if g.delta is None else _signed(g.delta)
        if g.low is not None and g.high is not None:
            delta += f" ({_signed(g.low)} .. {_signed(g.high)})"
        lost = ", ".join(f"`{q}` {r:.3f}→{c:.3f}" for q, r, c in g.losers[:_LOSERS]) or "-"
        verdict = f"**{label(g.verdict)}**" if g.verdict != "pass" else label(g.verdict)
        note = f" — {g.note}" if g.note else ""
        rows.append(
            f"| {_cell(g.dataset)} | `{_cell(g.gate)}` | {verdict} | {_cell(g.against or '-')} | {delta} | "
            f"{_cell(lost)}{_cell(note)} |"
        )
    table = (
        "| dataset | gate | verdict | against | delta (95% CI) | queries that lost most |\n"
        "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        if rows
        else ""
    )
    where = []
    if reports_dir is not None:
        where.append(f"reports: `{reports_dir}`")
    if history_dir is not None:
        where.append(f"history: `{history_dir}` (`evalsuite history {history_dir}`)")
    return head + table + ("; ".join(where) + "\n" if where else "")


def write_summary(text: str, path: Path | None, *, step_summary: bool = True) -> list[Path]:
    """Write ``text`` to ``path`` (replaced atomically) and, with ``step_summary``, append it to
    ``$GITHUB_STEP_SUMMARY`` when set (GitHub collects every step's additions there); the paths written."""
    from ..base.io import atomic_write_text

    out = []
    if path is not None:
        out.append(atomic_write_text(path, text))
    step = os.environ.get(STEP_SUMMARY_VARIABLE, "").strip() if step_summary else ""
    if step:
        with open(step, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
        out.append(Path(step))
    return out
