"""A sweep's slices: each cell's per-slice values with their 95% intervals (sweep.json), the slices each cell
moved most with their CIs (report.md, terminal), and small multiples of every slice across the cells with
error bars (report.html).

Membership is the base's (``result.base.slices``): every cell is paired with the base on the same queries,
even when the cell's own prefix or max length would count a query's tokens differently. Nothing here when
the sweep was run without a slice index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...reports.markdown import table
from ...reports.slice_plots import draw_small_multiples, slice_cells_dict, slice_panels, small_multiples_data
from ...reports.slices import moved_cells

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...reports.html import Charts
    from ...run.cache.results import Entry
    from ...slicing import SliceIndex, SliceRow
    from ...slicing.compare import SliceMove
    from ..results import CellResult, SweepResult

MOVED_PER_CELL = 3


def slice_tables(result: SweepResult) -> list[tuple[SliceRow, ...]]:
    """The slice tables (with intervals) of the base and every cell, in that order, on the base's membership:
    computed once per sweep (one bootstrap call per slice for all of them) and shared by sweep.json, report.md
    and report.html. Empty without a slice index."""
    index = result.base.slices
    if index is None:
        return []
    key = ("slice-tables",)
    if key not in result.derived:
        runs = [result.base.per_query] + [c.result.per_query for c in result.cells]
        result.derived[key] = index.tables(runs, intervals=True)
    found: list[tuple[SliceRow, ...]] = result.derived[key]
    return found


def cell_slices(result: SweepResult, c: CellResult) -> list[dict[str, object]] | None:
    """One cell's slices for sweep.json (None without a slice index)."""
    if result.base.slices is None:
        return None
    position = next(i for i, x in enumerate(result.cells) if x is c)
    return slice_cells_dict(slice_tables(result)[1 + position])


def base_slices(result: SweepResult) -> list[dict[str, object]] | None:
    return None if result.base.slices is None else slice_cells_dict(slice_tables(result)[0])


def cell_moves(result: SweepResult, c: CellResult) -> list[SliceMove]:
    """Every slice's paired delta of the cell against the base, with its CI, largest first (computed once per
    sweep for every cell together, and read back from the result cache when the per-query scores and slices
    are unchanged)."""
    index = result.base.slices
    if index is None or c.cell.same_as_base:
        return []
    key = ("slice-moves", c.cell.name)
    if key not in result.derived:
        todo = [
            x for x in result.cells if not x.cell.same_as_base and ("slice-moves", x.cell.name) not in result.derived
        ]
        for x, moves in zip(todo, _slice_moves_each(result, index, todo), strict=True):
            result.derived[("slice-moves", x.cell.name)] = [m for m in moves if m.comparison.ci.delta != 0]
    found: list[SliceMove] = result.derived[key]
    return found


def _slice_moves(result: SweepResult, index: SliceIndex, c: CellResult) -> list[SliceMove]:
    return _slice_moves_each(result, index, [c])[0]


def _slice_moves_each(result: SweepResult, index: SliceIndex, cells: Sequence[CellResult]) -> list[list[SliceMove]]:
    """Each cell's slice moves against the base: those the result cache holds read back, the others computed
    together (one :func:`~evalsuite.slicing.compare.slice_moves_each`: the same moves as one call per cell)."""
    from ...slicing.compare import MIN_COMPARED, slice_moves_each

    metrics = list(result.metrics)
    base = result.base.per_query
    store = result.store
    if store is None:
        return slice_moves_each(index, [c.result.per_query for c in cells], base, metrics)
    from ...run.cache.results import code_digest, json_digest, library_versions
    from ...scoring.stats import CONFIDENCE, N_RESAMPLES, POWER

    shared = {
        "reference": json_digest(base),
        "metrics": metrics,
        "slices": [[s.text, json_digest(index.members(s))] for s in index.reported()],
        "min_compared": MIN_COMPARED,
        "bootstrap": [N_RESAMPLES, 0, CONFIDENCE, POWER],
        "libraries": library_versions(("evalsuite", "numpy")),
        "code": code_digest(("evalsuite.scoring.stats", "evalsuite.slicing.compare", "evalsuite.run.cache.results")),
    }
    fields = [{**shared, "candidate": json_digest(c.result.per_query)} for c in cells]
    found = [store.load("slice-moves", f, _undump_moves) for f in fields]
    missing = [i for i, moves in enumerate(found) if moves is None]
    computed = slice_moves_each(index, [cells[i].result.per_query for i in missing], base, metrics)
    for i, moves in zip(missing, computed, strict=True):
        payload, arrays = _dump_moves(moves)
        store.save("slice-moves", fields[i], payload, arrays)
        found[i] = moves
    return [moves for moves in found if moves is not None]


def _dump_moves(moves: list[SliceMove]) -> tuple[Any, dict[str, Any]]:
    rows = [
        {
            "slice": m.slice,
            "metric": m.metric,
            "n_queries": m.n_queries,
            "candidate": m.candidate,
            "reference": m.reference,
            "comparison": m.comparison.to_dict(),
        }
        for m in moves
    ]
    return rows, {}


def _undump_moves(entry: Entry) -> list[SliceMove]:
    from ...slicing.compare import SliceMove
    from ..compare import comparison_from_dict

    return [
        SliceMove(
            str(r["slice"]),
            str(r["metric"]),
            int(r["n_queries"]),
            float(r["candidate"]),
            float(r["reference"]),
            comparison_from_dict(r["comparison"]),
        )
        for r in entry.payload
    ]


def sweep_slice_lines(result: SweepResult) -> list[str]:
    """For the terminal: per cell, the slice that moved most on the first metric, with its CI."""
    if result.base.slices is None or not result.metrics:
        return []
    first = result.metrics[0]
    lines = []
    for c in result.cells:
        moves = [m for m in cell_moves(result, c) if m.metric == first]
        if moves:
            m = moves[0]
            ci = m.comparison.ci
            lines.append(
                f"  {c.cell.name}: {m.slice} ({m.n_queries} queries) {first} {m.reference:.4f} -> "
                f"{m.candidate:.4f}, delta {ci.delta:+.4f} (95% CI {ci.low:+.4f} .. {ci.high:+.4f})"
            )
    return ["slice that moved most per cell:", *lines] if lines else []


def _slice_table(result: SweepResult, metric: str) -> tuple[list[str], list[list[str]]]:
    names = ["base"] + [c.cell.name for c in result.cells]
    return (
        ["slice", "queries", *names],
        [
            [p.slice, str(p.n_queries), *(f"{v:.4f}" for v in p.values)]
            for p in slice_panels(slice_tables(result), metric)
        ],
    )


def sweep_slices_markdown(result: SweepResult) -> list[str]:
    if result.base.slices is None or not result.metrics:
        return []
    metric = result.metrics[0]
    parts = [f"\n## Slices ({metric})\n\n", table(*_slice_table(result, metric))]
    rows = [[c.cell.name, *moved_cells(m)] for c in result.cells for m in cell_moves(result, c)[:MOVED_PER_CELL]]
    if rows:
        parts += [
            "\n### Slices each cell moved most\n\n",
            table(["cell", "slice", "metric", "queries", "base", "cell value", "delta", "95% CI", "sign-flip p"], rows),
            "\nDelta with its paired bootstrap 95% CI over the slice's queries (membership of the base "
            "contract); not corrected for the number of slices.\n",
        ]
    return parts


def slices_chart(result: SweepResult) -> tuple[Callable[..., Figure | None], tuple[object, ...]] | None:
    """The small multiples' chart call (function and plain-data arguments); None without a slice index."""
    if result.base.slices is None or not result.metrics:
        return None
    runs = [("base", result.base.per_query)] + [(c.cell.name, c.result.per_query) for c in result.cells]
    data = small_multiples_data(result.base.slices, runs, result.metrics[0], tables=slice_tables(result))
    return draw_small_multiples, data


def sweep_slices_html(result: SweepResult, charts: Charts | None = None) -> list[str]:
    """The slices section of report.html: small multiples (one panel per slice, one bar per cell) and the table
    (``charts``: where the chart may be drawing already)."""
    found = slices_chart(result)
    if found is None:
        return []
    from ...reports import html as h

    metric = result.metrics[0]
    parts = [h.heading(f"Slices ({metric})")]
    chart, args = found
    uri = h.chart_uri(result.store, chart, *args) if charts is None else charts.uri(chart, *args)
    if uri is not None:
        parts.append(
            h.figure_html(
                uri,
                f"{metric} per slice: one panel per slice, one bar per cell (red: base, dashed: the base's "
                "value), error bars: the 95% percentile bootstrap interval of each cell's slice mean over the "
                "slice's queries; membership of the base contract",
            )
        )
    parts.append(h.table(*_slice_table(result, metric)))
    return parts
