"""Per-slice values of several runs side by side (a sweep's base and cells): small multiples, one panel per
slice, one bar per run, on a shared y scale so the panels compare at a glance.

Drawn on ``matplotlib.figure.Figure`` with no pyplot (see ``html.py``); the caller embeds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..slicing import SliceIndex

if TYPE_CHECKING:
    from matplotlib.figure import Figure

BASE_COLOR = "#d62728"
CELL_COLOR = "#1f77b4"
MAX_PANELS = 24
_COLS = 4


def slice_values(
    index: SliceIndex, runs: Sequence[tuple[str, Mapping[str, Mapping[str, float]]]], metric: str
) -> list[tuple[str, int, list[float]]]:
    """``(slice, queries, [value per run])`` for every reported slice, runs given as ``(name, per_query)``."""
    tables = [{r.slice: r for r in index.table(pq)} for _, pq in runs]
    out = []
    for s in index.reported():
        rows = [t[s.text] for t in tables]
        if rows and rows[0].n_queries and all(metric in r.metrics for r in rows):
            out.append((s.text, rows[0].n_queries, [r.metrics[metric] for r in rows]))
    return out


def slice_cells_dict(index: SliceIndex, per_query: Mapping[str, Mapping[str, float]]) -> list[dict[str, object]]:
    """One run's slices as ``sweep.json`` holds them per cell."""
    return [r.to_dict() for r in index.table(per_query)]


def slice_small_multiples(
    index: SliceIndex,
    runs: Sequence[tuple[str, Mapping[str, Mapping[str, float]]]],
    metric: str,
    *,
    title: str | None = None,
) -> Figure | None:
    """One panel per slice (at most :data:`MAX_PANELS`), one bar per run (the first is the base, in red);
    None when there is nothing to draw."""
    return draw_small_multiples(*small_multiples_data(index, runs, metric, title=title))


def small_multiples_data(
    index: SliceIndex,
    runs: Sequence[tuple[str, Mapping[str, Mapping[str, float]]]],
    metric: str,
    *,
    title: str | None = None,
) -> tuple[list[tuple[str, int, list[float]]], list[str], str]:
    """What :func:`draw_small_multiples` draws, as plain data: the panels' values, the run names and the title."""
    values = slice_values(index, runs, metric)[:MAX_PANELS]
    return values, [name for name, _ in runs], title or f"{metric} per slice (red: base)"


def draw_small_multiples(
    values: Sequence[tuple[str, int, Sequence[float]]], names: Sequence[str], title: str
) -> Figure | None:
    """The small multiples of :func:`slice_small_multiples` from plain data (None when there is nothing to draw)."""
    from matplotlib.figure import Figure

    if not values or len(names) < 2:
        return None
    cols = min(_COLS, len(values))
    rows = (len(values) + cols - 1) // cols
    width = max(2.6, 0.35 * len(names) + 1.2)
    fig = Figure(figsize=(width * cols, 2.6 * rows), dpi=100, layout="constrained")
    grid = fig.subplots(rows, cols, squeeze=False, sharey=True)
    axes = [ax for row in grid for ax in row]
    colors = [BASE_COLOR] + [CELL_COLOR] * (len(names) - 1)
    for ax, (name, n, ys) in zip(axes, values, strict=False):
        ax.bar(range(len(ys)), ys, color=colors)
        ax.axhline(ys[0], color=BASE_COLOR, linewidth=0.8, linestyle="--")
        ax.set_title(f"{name} ({n} q)", fontsize=9)
        ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
        ax.set_ylim(0, 1.0 if max(max(v) for _, _, v in values) <= 1.0 else None)
    for ax in axes[len(values) :]:
        ax.set_visible(False)
    fig.suptitle(title)
    return fig
