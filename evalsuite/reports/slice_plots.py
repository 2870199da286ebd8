"""Per-slice values of several runs side by side (a sweep's base and cells): small multiples, one panel per
slice, one bar per run with the 95% interval of that run's slice mean as an error bar, on a shared y scale so
the panels compare at a glance.

The intervals are the slice table's (:meth:`evalsuite.slicing.SliceIndex.tables` with ``intervals``: a
percentile bootstrap over the slice's per-query values, :func:`evalsuite.scoring.stats.mean_bootstrap`); a run with
fewer than two scored queries in a slice has none and its bar gets no error bar. Drawn on
``matplotlib.figure.Figure`` with no pyplot (see ``html.py``); the caller embeds it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..slicing import SliceIndex, SliceRow

if TYPE_CHECKING:
    from matplotlib.figure import Figure

BASE_COLOR = "#d62728"
CELL_COLOR = "#1f77b4"
ERROR_COLOR = "#333333"
MAX_PANELS = 24
_COLS = 4

PerQuery = Mapping[str, Mapping[str, float]]


class SlicePanel(NamedTuple):
    """One slice's panel as plain data (a tuple, so it keys the plot cache as JSON): its query count, and per
    run (the base first) the slice mean and its 95% interval (None: fewer than two scored queries)."""

    slice: str
    n_queries: int
    values: tuple[float, ...]
    low: tuple[float | None, ...]
    high: tuple[float | None, ...]


def slice_panels(tables: Sequence[Sequence[SliceRow]], metric: str) -> list[SlicePanel]:
    """The panels of every slice the runs' tables (one per run, rows in the same slice order, from
    :meth:`SliceIndex.tables`) all hold ``metric`` for; each run's interval from that run's own row."""
    out = []
    for rows in zip(*tables, strict=True):
        if rows and rows[0].n_queries and all(metric in r.metrics for r in rows):
            bounds = [r.intervals.get(metric) for r in rows]
            out.append(
                SlicePanel(
                    rows[0].slice,
                    rows[0].n_queries,
                    tuple(r.metrics[metric] for r in rows),
                    tuple(None if b is None else b[0] for b in bounds),
                    tuple(None if b is None else b[1] for b in bounds),
                )
            )
    return out


def slice_values(index: SliceIndex, runs: Sequence[tuple[str, PerQuery]], metric: str) -> list[SlicePanel]:
    """:func:`slice_panels` of every reported slice, runs given as ``(name, per_query)``."""
    return slice_panels(index.tables([pq for _, pq in runs], intervals=True), metric)


def slice_cells_dict(rows: Sequence[SliceRow]) -> list[dict[str, object]]:
    """One run's slices as ``sweep.json`` holds them per cell (with ``ci_low`` / ``ci_high`` per metric)."""
    return [r.to_dict() for r in rows]


def slice_small_multiples(
    index: SliceIndex, runs: Sequence[tuple[str, PerQuery]], metric: str, *, title: str | None = None
) -> Figure | None:
    """One panel per slice (at most :data:`MAX_PANELS`), one bar per run (the first is the base, in red) with
    its interval; None when there is nothing to draw."""
    return draw_small_multiples(*small_multiples_data(index, runs, metric, title=title))


def small_multiples_data(
    index: SliceIndex,
    runs: Sequence[tuple[str, PerQuery]],
    metric: str,
    *,
    title: str | None = None,
    tables: Sequence[Sequence[SliceRow]] | None = None,
) -> tuple[list[SlicePanel], list[str], str]:
    """What :func:`draw_small_multiples` draws, as plain data: the panels (values and intervals), the run names
    and the title. ``tables``: the runs' slice tables with intervals when the caller has them already."""
    found = tables if tables is not None else index.tables([pq for _, pq in runs], intervals=True)
    panels = slice_panels(found, metric)[:MAX_PANELS]
    return panels, [name for name, _ in runs], title or f"{metric} per slice (red: base; bars: 95% CI)"


def error_extents(panel: SlicePanel) -> tuple[list[float], list[float]]:
    """``(below, above)``: each bar's distance down to its interval's low end and up to its high end (NaN, no
    error bar, without an interval; never negative, so a zero-width interval rounding past its mean stays 0)."""
    below = [math.nan if lo is None else max(0.0, v - lo) for v, lo in zip(panel.values, panel.low, strict=True)]
    above = [math.nan if hi is None else max(0.0, hi - v) for v, hi in zip(panel.values, panel.high, strict=True)]
    return below, above


def draw_small_multiples(found: Sequence[SlicePanel], names: Sequence[str], title: str) -> Figure | None:
    """The small multiples of :func:`slice_small_multiples` from plain data (None when there is nothing to draw)."""
    from matplotlib.figure import Figure

    if not found or len(names) < 2:
        return None
    cols = min(_COLS, len(found))
    rows = (len(found) + cols - 1) // cols
    width = max(2.6, 0.35 * len(names) + 1.2)
    fig = Figure(figsize=(width * cols, 2.6 * rows), dpi=100, layout="constrained")
    grid = fig.subplots(rows, cols, squeeze=False, sharey=True)
    axes = [ax for row in grid for ax in row]
    colors = [BASE_COLOR] + [CELL_COLOR] * (len(names) - 1)
    top = max(max(v for v in (*p.values, *p.high) if v is not None) for p in found)
    for ax, panel in zip(axes, found, strict=False):
        xs = range(len(panel.values))
        ax.bar(xs, panel.values, color=colors)
        ax.errorbar(
            xs, panel.values, yerr=error_extents(panel), fmt="none", ecolor=ERROR_COLOR, elinewidth=0.8, capsize=2
        )
        ax.axhline(panel.values[0], color=BASE_COLOR, linewidth=0.8, linestyle="--")
        ax.set_title(f"{panel.slice} ({panel.n_queries} q)", fontsize=9)
        ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
        ax.set_ylim(0, 1.0 if top <= 1.0 else None)
    for ax in axes[len(found) :]:
        ax.set_visible(False)
    fig.suptitle(title)
    return fig
