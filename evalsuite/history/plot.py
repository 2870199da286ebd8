"""The self-contained HTML page of `evalsuite history`: per model and dataset, the table of releases and one plot
per metric across releases (the value, its 95% CI as a band, and each gate's threshold as the lowest value that
release needed to pass). Plots are inline PNG drawn on an Agg canvas (`reports/html.py`): nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..reports.html import figure_html, heading, page, paragraph, png_data_uri, table
from .record import HistoryRecord
from .table import headers, metrics_of, rows

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def thresholds(records: Sequence[HistoryRecord], metric: str) -> dict[str, list[tuple[int, float]]]:
    """Per gate expression, the (release index, pass line) points of ``metric``'s gates: each recorded verdict's
    ``pass_line``, which its gate kind drew when the release was recorded (``GateKind.pass_line``)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for i, r in enumerate(records):
        for g in r.gates:
            line = g.pass_line if g.metric == metric else None
            if line is not None:
                out.setdefault(g.gate, []).append((i, line))
    return out


def metric_chart(title: str, records: Sequence[HistoryRecord], metric: str) -> Figure:
    """One metric across releases: values with the CI band, gate pass lines dashed, failed releases marked."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 3.8), dpi=100, layout="constrained")
    ax = fig.subplots()
    points = [(i, r.metrics[metric]) for i, r in enumerate(records) if metric in r.metrics]
    xs = [i for i, _ in points]
    ax.fill_between(xs, [v.low for _, v in points], [v.high for _, v in points], alpha=0.2, label="95% CI")
    ax.plot(xs, [v.value for _, v in points], marker="o", label=metric)
    failed = [(i, v.value) for i, v in points if records[i].verdict == "fail"]
    if failed:
        ax.plot(
            *zip(*failed, strict=True), marker="x", markersize=11, color="#b42318", linestyle="none", label="failed"
        )
    for expr, pts in thresholds(records, metric).items():
        ax.plot([i for i, _ in pts], [y for _, y in pts], linestyle="--", marker="_", markersize=12, label=f"{expr}")
    ax.set_xticks(range(len(records)), [r.revision[:8] for r in records], rotation=30, fontsize=7)
    ax.set_xlabel("release (revision)")
    ax.set_ylabel(metric)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def history_html(series: Mapping[tuple[str, str], Sequence[HistoryRecord]], source: str) -> str:
    parts = [heading("evalsuite release history", 1), paragraph(f"history directory: {source}", "meta")]
    for (model, dataset), records in series.items():
        metrics = metrics_of(records)
        parts.append(heading(f"{model} on {dataset}: {len(records)} release(s)"))
        parts.append(table(headers(metrics), rows(records, metrics)))
        for m in metrics:
            uri = png_data_uri(metric_chart(f"{model} on {dataset}: {m}", records, m))
            parts.append(
                figure_html(uri, f"{m} per release with its 95% CI band; dashed: the lowest value each gate passed")
            )
    return page("evalsuite release history", parts)
