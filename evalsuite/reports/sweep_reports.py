"""The files of one `evalsuite sweep`: sweep.json, report.md and a self-contained report.html."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..io import atomic_write_json, atomic_write_text
from ..result import SCHEMA_VERSION
from ..sweep.registry import declaration
from .index_reports import index_html, index_markdown
from .markdown import contract_rows, table
from .sweep_slices import base_slices, cell_slices, sweep_slices_html, sweep_slices_markdown

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..contract import Contract
    from ..sweep.execute import CellResult, SweepResult

BYTES_PER_FLOAT32 = 4
ONE_MILLION = 1_000_000


def storage(contract: Contract) -> dict[str, int | str]:
    """Float32 storage of one vector and of a flat index over one million vectors."""
    per_vector = contract.dim * BYTES_PER_FLOAT32
    return {
        "dim": contract.dim,
        "dtype_stored": "float32",
        "bytes_per_vector": per_vector,
        "index_bytes_1m_vectors": per_vector * ONE_MILLION,
        "index_size_1m_vectors": _human(per_vector * ONE_MILLION),
    }


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1000
    return f"{n} B"


def _r(x: float) -> float:
    return round(float(x), 6)


def shows_storage(c: CellResult) -> bool:
    """Whether ``c`` varies an axis whose declaration asks for storage figures (``dim``)."""
    decls = (declaration(a) for a, _ in c.cell.varies)
    return any(d is not None and d.shows_storage for d in decls)


def _cell_dict(result: SweepResult, c: CellResult) -> dict[str, Any]:
    r = c.result
    out: dict[str, Any] = {
        "name": c.cell.name,
        "axis": c.cell.axis,
        "value": c.cell.value,
        "varies": dict(c.cell.varies),
        "same_as_base": c.cell.same_as_base,
        "contract": r.contract.to_dict(),
        "contract_fingerprint": r.contract.fingerprint(),
        "metrics": {m: _r(v) for m, v in r.metrics.items()},
        "delta": {m: _r(v) for m, v in c.delta.items()},
        "p_values": {m: _r(v) for m, v in c.p_values.items()},
        "significant": c.significant(result.alpha),
        "uncertainty": {m: {k: _r(v) for k, v in st.to_dict().items()} for m, st in c.stats.items()},
    }
    if shows_storage(c):
        out["storage"] = storage(r.contract)
    if c.index is not None:
        out["index"] = c.index.to_dict()
    slices = cell_slices(result, c)
    if slices is not None:
        out["slices"] = slices
    return out


def sweep_to_dict(result: SweepResult) -> dict[str, Any]:
    base = result.base
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sweep",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": "grid" if result.grid else "one-at-a-time",
        "axes": [{"name": a.name, "values": list(a.labels)} for a in result.axes],
        "metrics": list(result.metrics),
        "significance": {
            "test": f"ranx paired {result.test} test vs base, per query",
            "alpha": result.alpha,
            "correction": f"{result.correction} across every cell and metric (q-values)",
            "marks": f"significant: q-value < {result.alpha}",
            "intervals": "95% paired bootstrap CI of the delta over queries (10,000 resamples, seed 0); "
            "sign-flip p: paired randomization test; MDE: one-sided 5%, power 80%",
        },
        "dataset": base.dataset.identity.to_dict(),
        "model": base.manifest.get("model"),
        "libraries": base.manifest.get("libraries"),
        "device": base.manifest.get("device"),
        "base": {
            "name": "base",
            "contract": base.contract.to_dict(),
            "contract_fingerprint": base.contract.fingerprint(),
            "metrics": {m: _r(v) for m, v in base.metrics.items()},
            "storage": storage(base.contract),
            **({"slices": base_slices(result)} if base.slices is not None else {}),
        },
        "cells": [_cell_dict(result, c) for c in result.cells],
        "execution": result.stats.to_dict(),
        "warnings": list(result.warnings),
    }


def _delta_text(c: CellResult, m: str, alpha: float) -> str:
    if c.cell.same_as_base:
        return "="
    return f"{c.delta[m]:+.4f}{'*' if c.significant(alpha)[m] else ''}"


def _marks_text(result: SweepResult) -> str:
    return (
        f"Δ is the cell minus the base; `*` marks q < {result.alpha}: ranx's paired {result.test} test over "
        f"queries, adjusted for the false discovery rate across every cell and metric ({result.correction}). "
        "The 95% CI of each Δ is a paired bootstrap over queries; MDE is the smallest true difference a "
        "one-sided 5% test detects with 80% power on these queries."
    )


def _ci_rows(result: SweepResult) -> tuple[list[str], list[list[str]]]:
    """Per cell and metric: Δ with its 95% CI and the MDE."""
    headers = ["cell"] + [h for m in result.metrics for h in (f"Δ {m} (95% CI)", f"MDE {m}")]
    rows = []
    for c in result.cells:
        row = [c.cell.name]
        for m in result.metrics:
            st = c.stats.get(m)
            if st is None:
                row += ["-", "-"]
                continue
            ci = st.comparison.ci
            row += [f"{ci.delta:+.4f} [{ci.low:+.4f}, {ci.high:+.4f}]", f"{st.comparison.mde:.4f}"]
        rows.append(row)
    return headers, rows


def sweep_table_rows(result: SweepResult) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the main table: base first, then each cell with value and Δ per metric
    (``*`` when the paired test against the base is significant)."""
    headers = ["cell"] + [h for m in result.metrics for h in (m, f"Δ {m}")]
    rows: list[list[str]] = [["base"] + [x for m in result.metrics for x in (f"{result.base.metrics[m]:.4f}", "")]]
    for c in result.cells:
        name = c.cell.name + (" (= base)" if c.cell.same_as_base else "")
        rows.append(
            [name]
            + [x for m in result.metrics for x in (f"{c.result.metrics[m]:.4f}", _delta_text(c, m, result.alpha))]
        )
    return headers, rows


def _p_rows(result: SweepResult) -> tuple[list[str], list[list[str]]]:
    headers = ["cell"] + [h for m in result.metrics for h in (f"p {m}", f"q {m}", f"sign-flip p {m}")]
    rows = [
        [c.cell.name]
        + [
            x
            for m in result.metrics
            for x in (
                f"{c.p_values[m]:.4g}",
                f"{c.stats[m].q_value:.4g}" if m in c.stats else "-",
                f"{c.stats[m].comparison.p_value:.4g}" if m in c.stats else "-",
            )
        ]
        for c in result.cells
    ]
    return headers, rows


def _storage_rows(result: SweepResult) -> list[list[object]]:
    seen: dict[int, list[object]] = {}
    for contract in [result.base.contract] + [c.result.contract for c in result.cells if shows_storage(c)]:
        s = storage(contract)
        seen[contract.dim] = [contract.dim, s["bytes_per_vector"], s["index_size_1m_vectors"]]
    return [seen[d] for d in sorted(seen, reverse=True)]


def _execution_lines(result: SweepResult) -> list[str]:
    st = result.stats
    lines = [
        f"{len(result.cells)} cells ({'grid' if result.grid else 'one variable at a time'}), "
        f"{st.contracts_scored} distinct contracts scored",
        f"forward passes: {st.passes_by_role['query']} query, {st.passes_by_role['document']} document; "
        f"texts through the model: {st.texts_encoded_by_role['query']} queries, "
        f"{st.texts_encoded_by_role['document']} documents; models loaded: {st.models_loaded}",
        f"encode {st.encode_seconds:.2f} s, search + score {st.score_seconds:.2f} s",
    ]
    if st.cache:
        lines.append(
            f"embedding cache: {st.cache['hits']} hits, {st.cache['misses']} misses, "
            f"{st.cache['corrupt']} corrupt segment(s) recomputed"
        )
    return lines


def sweep_markdown(result: SweepResult) -> str:
    base = result.base
    ident = base.dataset.identity
    model = base.manifest.get("model", {})
    headers, rows = sweep_table_rows(result)
    ph, pr = _p_rows(result)
    parts = [
        "# evalsuite sweep\n\n",
        f"Model **{model.get('name', base.contract.model)}** at revision `{base.contract.model_revision}` on "
        f"dataset **{ident.name}** (split `{ident.split}`, {ident.n_documents} documents, {ident.n_queries} "
        f"queries). Axes: " + "; ".join(f"`{a.name}` = {', '.join(a.labels)}" for a in result.axes) + ".\n\n",
        _marks_text(result) + "\n\n",
        "## Results\n\n",
        table(headers, rows),
        "\n## Uncertainty (95% CI of Δ vs base)\n\n",
        table(*_ci_rows(result)),
        f"\n## Significance (p-values vs base; q: {result.correction})\n\n",
        table(ph, pr),
    ]
    parts += index_markdown(result)
    parts += sweep_slices_markdown(result)
    if any(shows_storage(c) for c in result.cells):
        parts += [
            "\n## Storage (float32, flat index)\n\n",
            table(["dim", "bytes per vector", "index for 1M vectors"], _storage_rows(result)),
        ]
    parts += [
        "\n## Base contract\n\n",
        table(["field", "value"], contract_rows(base.contract.to_dict())),
        "\n## Execution\n\n",
        "".join(f"- {line}\n" for line in _execution_lines(result)),
    ]
    if result.warnings:
        parts += ["\n## Warnings\n\n", "".join(f"- {w}\n" for w in result.warnings)]
    return "".join(parts)


# -- plots --------------------------------------------------------------------------------------
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


def sweep_figures(result: SweepResult) -> list[tuple[str, Figure]]:
    """(caption, matplotlib Figure) per axis: a line chart for dim and max length, bars otherwise."""
    from .html import bar_chart, line_chart

    base = result.base
    metrics = list(result.metrics)
    figures = []
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
            fig = line_chart(f"metric vs {label}", label, metrics, series, (float(x0), base.metrics), errors=errors)
            figures.append(
                (
                    f"Metrics vs {label}; the red star and dashed line are the base contract "
                    f"({axis.name}={x0}). {_ERROR_BARS}",
                    fig,
                )
            )
        else:
            cats = list(axis.labels)
            bars = {g: {c.cell.label(axis.name) or "": c.result.metrics for c in cells} for g, cells in groups.items()}
            bar_errors = {
                g: {c.cell.label(axis.name) or "": _bar(c, base.metrics) for c in cells} for g, cells in groups.items()
            }
            base_bar = _base_bar(groups, axis.name)
            fig = bar_chart(f"metrics per {axis.name}", metrics, cats, bars, base.metrics, base_bar, errors=bar_errors)
            figures.append(
                (
                    f"Metrics per {axis.name} value; the dashed red line is the base contract"
                    + (f", the hatched bar the cell equal to it ({base_bar[1]})." if base_bar else ".")
                    + f" {_ERROR_BARS}",
                    fig,
                )
            )
    return figures


def sweep_html(result: SweepResult) -> str:
    from . import html as h

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
            + _marks_text(result).replace("`", ""),
            "meta",
        ),
        h.heading("Results"),
        h.table(headers, rows, row_classes=row_classes, cell_classes=cell_classes),
        h.heading("Plots"),
    ]
    for caption, fig in sweep_figures(result):
        parts.append(h.figure_html(h.png_data_uri(fig), caption))
    ph, pr = _p_rows(result)
    parts += [
        h.heading("Uncertainty (95% CI of Δ vs base)"),
        h.table(*_ci_rows(result)),
        h.heading(f"Significance (p-values vs base; q: {result.correction})"),
        h.table(ph, pr),
    ]
    parts += index_html(result)
    parts += sweep_slices_html(result)
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


def write_sweep_reports(result: SweepResult, out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    return {
        "sweep.json": atomic_write_json(out / "sweep.json", sweep_to_dict(result)),
        "report.md": atomic_write_text(out / "report.md", sweep_markdown(result)),
        "report.html": atomic_write_text(out / "report.html", sweep_html(result)),
    }
