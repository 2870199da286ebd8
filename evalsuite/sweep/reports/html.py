"""A sweep as a self-contained HTML page (report.html): the tables, and one plot per axis."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from ...reports.markdown import contract_rows
from .choice import choice_html
from .data import shows_storage
from .index import index_html
from .markdown import _ci_rows, _execution_lines, _p_rows, _storage_rows, marks_legend, sweep_table_rows
from .slices import slices_chart, sweep_slices_html

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...reports.html import Charts
    from ..results import CellResult, SweepResult


def _base_bar(groups: dict[str, list[CellResult]], axis: str) -> tuple[str, str] | None:
    """(group, value label) of the cell on ``axis`` whose contract equals the base, if any."""
    for group, cells in groups.items():
        for c in cells:
            if c.cell.same_as_base:
                return group, c.cell.label(axis) or ""
    return None


def _groups(result: SweepResult, axis: str) -> dict[str, list[CellResult]]:
    """Cells that set ``axis``, grouped by the values they give the other axes."""
    out: dict[str, list[CellResult]] = {}
    for c in result.cells:
        if c.cell.label(axis) is None:
            continue
        other = ",".join(f"{a}={v}" for a, v in c.cell.varies if a != axis)
        out.setdefault(other, []).append(c)
    return out


_ERROR_BARS = "Error bars: the 95% bootstrap CI of the cell's difference from the base, around the cell's value."


def _bar(c: CellResult, base: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Per metric, the error bar of a cell's value: base + the CI of its delta (low, high)."""
    return {m: (base[m] + st.comparison.ci.low, base[m] + st.comparison.ci.high) for m, st in c.stats.items()}


Chart = tuple[str, Callable[..., "Figure"], tuple[object, ...], dict[str, object]]  # caption, chart, args, kwargs


def sweep_figures(result: SweepResult) -> list[tuple[str, Figure]]:
    """(caption, matplotlib Figure) per axis: a line chart for dim and max length, bars otherwise."""
    return [(caption, chart(*args, **kwargs)) for caption, chart, args, kwargs in sweep_charts(result)]


def sweep_charts(result: SweepResult) -> list[Chart]:
    """Per axis, the caption and the chart call (function and plain-data arguments) that draws its figure."""
    from ...reports.html import bar_chart, line_chart

    base = result.base
    metrics = list(result.metrics)
    figures: list[Chart] = []
    for axis in result.axes:
        groups = _groups(result, axis.name)
        if axis.declaration.numeric:
            x0 = getattr(base.contract, axis.name)
            series = {
                g: [(float(c.cell.label(axis.name) or 0), c.result.metrics) for c in cells]
                for g, cells in groups.items()
            }
            errors = {
                g: [(float(c.cell.label(axis.name) or 0), _bar(c, base.metrics)) for c in cells]
                for g, cells in groups.items()
            }
            label = axis.declaration.label
            figures.append(
                (
                    f"Metrics vs {label}; the red star and dashed line are the base contract "
                    f"({axis.name}={x0}). {_ERROR_BARS}",
                    line_chart,
                    (f"metric vs {label}", label, metrics, series, (float(x0), base.metrics)),
                    {"errors": errors},
                )
            )
        else:
            cats = list(axis.labels)
            bars = {g: {c.cell.label(axis.name) or "": c.result.metrics for c in cells} for g, cells in groups.items()}
            bar_errors = {
                g: {c.cell.label(axis.name) or "": _bar(c, base.metrics) for c in cells} for g, cells in groups.items()
            }
            base_bar = _base_bar(groups, axis.name)
            figures.append(
                (
                    f"Metrics per {axis.name} value; the dashed red line is the base contract"
                    + (f", the hatched bar the cell equal to it ({base_bar[1]})." if base_bar else ".")
                    + f" {_ERROR_BARS}",
                    bar_chart,
                    (f"metrics per {axis.name}", metrics, cats, bars, base.metrics, base_bar),
                    {"errors": bar_errors},
                )
            )
    return figures


PageChart = tuple[Callable[..., "Figure | None"], tuple[object, ...], dict[str, object]]  # chart, args, kwargs


def page_charts(result: SweepResult) -> Iterator[PageChart]:
    """Every chart report.html shows, as (function, plain-data arguments, keyword arguments): the slices' small
    multiples first (the largest, and the last to be ready: its intervals are computed before it is yielded, while
    nothing else draws), then one per axis."""
    found = slices_chart(result)
    if found is not None:
        yield found[0], found[1], {}
    for _, chart, args, kwargs in sweep_charts(result):
        yield chart, args, kwargs


def sweep_html(result: SweepResult, charts: Charts | None = None) -> str:
    """report.html (``charts``: where its charts may be drawing already, see :func:`page_charts`)."""
    from ...reports import html as h

    base = result.base
    ident = base.dataset.identity
    model = base.manifest.get("model", {})
    headers, rows = sweep_table_rows(result)
    row_classes = ["base"] + ["base" if c.cell.same_as_base else "" for c in result.cells]
    cell_classes: list[Sequence[str]] = [()]
    for c in result.cells:
        cls = [""]
        for m in result.metrics:
            sig = c.significant(result.alpha)[m] and not c.cell.same_as_base
            cls += ["", ("up" if c.delta[m] > 0 else "down") if sig else ""]
        cell_classes.append(cls)
    parts = [
        h.heading("evalsuite sweep", 1),
        h.paragraph(
            f"Model {model.get('name', base.contract.model)} at revision {base.contract.model_revision}; "
            f"dataset {ident.name} (split {ident.split}, {ident.n_documents} documents, {ident.n_queries} "
            f"queries, sha256 {ident.sha256[:16]}…).",
            "meta",
        ),
        h.paragraph(
            "Axes: "
            + "; ".join(f"{a.name} = {', '.join(a.labels)}" for a in result.axes)
            + f" ({'grid' if result.grid else 'one variable at a time'}). "
            + marks_legend(result).replace("`", ""),
            "meta",
        ),
        h.heading("Results"),
        h.table(headers, rows, row_classes=row_classes, cell_classes=cell_classes),
        *choice_html(result),
        h.heading("Plots"),
    ]
    for caption, chart, args, kwargs in sweep_charts(result):
        uri = (
            h.chart_uri(result.store, chart, *args, **kwargs) if charts is None else charts.uri(chart, *args, **kwargs)
        )
        if uri is not None:
            parts.append(h.figure_html(uri, caption))
    ph, pr = _p_rows(result)
    parts += [
        h.heading("Uncertainty (95% CI of Δ vs base)"),
        h.table(*_ci_rows(result)),
        h.heading(f"Significance (p-values vs base; q: {result.correction})"),
        h.table(ph, pr),
    ]
    parts += index_html(result)
    parts += sweep_slices_html(result, charts)
    if any(shows_storage(c) for c in result.cells):
        parts += [
            h.heading("Storage (float32, flat index)"),
            h.table(["dim", "bytes per vector", "index for 1M vectors"], _storage_rows(result)),
        ]
    parts += [
        h.heading("Base contract"),
        h.table(["field", "value"], contract_rows(base.contract.to_dict())),
        h.heading("Execution"),
        "".join(h.paragraph(line) for line in _execution_lines(result)),
    ]
    if result.warnings:
        parts += [h.heading("Warnings"), "".join(h.paragraph(w) for w in result.warnings)]
    return h.page("evalsuite sweep", parts)
