"""The table of releases `evalsuite history` prints and the HTML page shows: one row per release of a model lineage
on a dataset, oldest first (revision, the directory or hub id it was read from, date, commit, every metric with its
CI, the verdict and each gate's)."""

from __future__ import annotations

from collections.abc import Sequence

from ..base.verdict import label
from .record import HistoryRecord

_GATE_VERDICT = {"pass": "pass", "fail": "FAIL", "inconclusive": "INCONCLUSIVE"}


def metrics_of(records: Sequence[HistoryRecord]) -> list[str]:
    """Every metric any record holds, in the order first seen."""
    return list(dict.fromkeys(m for r in records for m in r.metrics))


def gate_text(record: HistoryRecord) -> str:
    """``ndcg@10:max_drop=0.01 pass; ndcg@10:max_drop_from_first=0.02 FAIL``: each gate and its verdict."""
    return "; ".join(f"{g.gate} {_GATE_VERDICT[g.verdict]}" for g in record.gates) or "-"


def headers(metrics: Sequence[str]) -> list[str]:
    return ["#", "revision", "source", "date", "commit", *[f"{m} (95% CI)" for m in metrics], "verdict", "gates"]


def rows(records: Sequence[HistoryRecord], metrics: Sequence[str]) -> list[list[str]]:
    out = []
    for i, r in enumerate(records, 1):
        cells = [
            str(i),
            r.revision[:12],
            r.source or "-",
            (r.first_recorded_at or r.recorded_at)[:16].replace("T", " "),
            (r.commit or "-")[:8],
        ]
        for m in metrics:
            v = r.metrics.get(m)
            cells.append("-" if v is None else f"{v.value:.4f} ({v.low:.4f} .. {v.high:.4f})")
        cells += [label(r.verdict) if r.verdict else "-", gate_text(r)]
        out.append(cells)
    return out


def text_table(records: Sequence[HistoryRecord]) -> list[str]:
    """The aligned plain-text table (the terminal)."""
    metrics = metrics_of(records)
    head, body = headers(metrics), rows(records, metrics)
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(head)]
    return ["  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() for cells in [head, *body]]
