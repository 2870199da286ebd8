"""The stage table every report shows (terminal, Markdown, HTML): the reference, each stage, production."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .result import BudgetResult, StageEntry


def _bytes(v: object) -> str:
    if not isinstance(v, (int, float)):
        return "-"
    from ..retrieval.index.footprint import human_bytes

    return human_bytes(float(v))


def cost_text(cost: Mapping[str, object]) -> str:
    c = dict(cost)
    parts = []
    if c.get("bytes_per_vector") is not None:
        parts.append(f"{c['bytes_per_vector']:g} B/vector")
    if c.get("index_bytes") is not None:
        parts.append(f"index {_bytes(c['index_bytes'])}")
    for key, label in (("query_p50_ms", "p50"), ("query_mean_ms", "mean")):
        if c.get(key) is not None:
            parts.append(f"{label} {c[key]:.3f} ms/query")
    return ", ".join(parts) or "-"


def stage_rows(result: BudgetResult) -> tuple[list[str], list[list[str]]]:
    """The stage table: the reference, each stage (skipped ones say why), production; on the primary metric."""
    m = result.primary
    rule = result.attribution
    headers = ["stage", m, f"Δ {m} (95% CI)", "p", "lost", "cost"]
    if rule == "shapley":
        headers.insert(4, f"Shapley Δ {m} (95% CI)")
    rows = [["reference", f"{result.reference['metrics'][m]:.4f}", "", "", "", cost_text(result.reference["cost"])]]
    if rule == "shapley":
        rows[0].insert(4, "")
    for s in result.stages:
        rows.append(_stage_row(s, m, rule))
    t = result.total[m]
    last = ["production", f"{result.production['metrics'][m]:.4f}", ci_text(t.value, t.low, t.high), f"{t.p:.3g}"]
    last += ([""] if rule == "shapley" else []) + [f"{t.lost_share:.0%}", cost_text(result.production["cost"])]
    rows.append(last)
    return headers, rows


def ci_text(v: float, low: float, high: float) -> str:
    return f"{v:+.4f} [{low:+.4f}, {high:+.4f}]"


def _stage_row(s: StageEntry, m: str, rule: str) -> list[str]:
    if s.skipped is not None:
        row = [s.name, "", f"skipped ({s.skipped.split(':')[0]})", "", "", ""]
        return row[:4] + ([""] if rule == "shapley" else []) + row[4:]
    c = s.delta[m]
    row = [s.name, f"{s.metrics[m]:.4f}", ci_text(c.value, c.low, c.high), f"{c.p:.3g}"]
    if rule == "shapley":
        sh = s.shapley[m]
        row.append(ci_text(sh.value, sh.low, sh.high))
    return [*row, f"{c.lost_share:.0%}", cost_text(dict(s.cost))]
