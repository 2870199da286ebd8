"""A loss budget as a self-contained HTML page: the sentence, the waterfall (the reference, each measured stage's
charge as a floating bar with its 95% CI, production), and the stage table (the shared writers of
:mod:`evalsuite.reports.html`)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from ..reports.html import figure_html, heading, page, paragraph, png_data_uri, table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import BudgetResult

LOSS, GAIN, QUIET, END = "#d62728", "#2ca02c", "#9e9e9e", "#1f77b4"


def waterfall_bars(result: BudgetResult, metric: str) -> list[tuple[str, float, float, float, float, str]]:
    """(label, bottom, height, low, high, colour) per bar: the reference from 0, each measured stage from where
    the previous ended (its charge under the report's attribution, CI as the error bar), production from 0."""
    ref = float(result.reference["metrics"][metric])
    prod = float(result.production["metrics"][metric])
    bars = [("reference", 0.0, ref, ref, ref, END)]
    level = ref
    for s in result.measured:
        c = s.charge(result.attribution)[metric]
        colour = QUIET if not c.measurable else (LOSS if c.value < 0 else GAIN)
        bars.append((s.name, level, c.value, level + c.low, level + c.high, colour))
        level += c.value
    t = result.total[metric]
    bars.append(("production", 0.0, prod, ref + t.low, ref + t.high, END))
    return bars


def waterfall(result: BudgetResult, metric: str) -> Figure:
    from matplotlib.figure import Figure

    bars = waterfall_bars(result, metric)
    fig = Figure(figsize=(max(5.0, 1.1 * len(bars) + 1.5), 3.8), dpi=100, layout="constrained")
    ax = fig.subplots()
    xs = list(range(len(bars)))
    for x, (label, bottom, height, low, high, colour) in zip(xs, bars, strict=True):
        ax.bar(x, height, bottom=bottom, color=colour, width=0.6)
        top = bottom + height
        if label not in ("reference",):
            ax.errorbar(x, top, yerr=[[max(0.0, top - low)], [max(0.0, high - top)]], color="#222", capsize=4)
        text = f"{top:.4f}" if label in ("reference", "production") else f"{height:+.4f}"
        ax.annotate(
            text, (x, max(top, bottom)), ha="center", va="bottom", fontsize=8, xytext=(0, 3), textcoords="offset points"
        )
    tops = [b + h for _, b, h, _, _, _ in bars] + [lo for *_, lo, _, _ in bars]
    lo = min(tops[1:]) if len(tops) > 1 else 0.0
    span = max(abs(bars[0][2] - lo), 0.01)
    ax.set_ylim(max(0.0, lo - 0.6 * span), bars[0][2] + 0.35 * span)
    ax.set_xticks(xs, [b[0] for b in bars], rotation=20)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric}: from the reference to production, stage by stage ({result.attribution})")
    ax.grid(axis="y", alpha=0.3)
    return fig


def budget_html(result: BudgetResult) -> str:
    from .table import stage_rows

    m = result.primary
    parts = [
        heading("Loss budget", 1),
        f"<p><strong>{html.escape(result.sentence())}</strong></p>\n",  # the answer, first
        figure_html(
            png_data_uri(waterfall(result, m)),
            f"Waterfall of {m}: red bars lose, green bars gain, grey bars are not measurable (95% CI holds 0)",
        ),
        heading("Stages"),
        table(*stage_rows(result)),
    ]
    if result.choice is not None:
        from ..sweep.reports.choice import choice_legend, choice_rows

        c = result.choice
        parts += [
            heading("Choice"),
            paragraph(c.sentence()),
            paragraph(choice_legend(c), "meta"),
            table(*choice_rows(c)),
        ]
    if result.disagreements:
        parts += [heading("Where the order matters"), *[paragraph(d) for d in result.disagreements]]
    if result.notes:
        parts += [heading("Notes"), *[paragraph(n) for n in result.notes]]
    return page(f"Loss budget: {m}", parts)
