"""What each index costs in a sweep: the index table, the Matryoshka x quantization table and the
Pareto plots (quality vs bytes per vector, quality vs query latency)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...reports.markdown import table
from ...retrieval.index.footprint import human_bytes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..index_cells import IndexCell
    from ..results import CellResult, SweepResult


def index_cells(result: SweepResult) -> list[CellResult]:
    """The cells that vary the index (each has its measurements)."""
    return [c for c in result.cells if c.index is not None]


def _recall_ks(result: SweepResult) -> list[int]:
    return sorted({k for c in index_cells(result) if c.index for k in c.index.report.recall})


def index_table_rows(result: SweepResult) -> tuple[list[str], list[list[str]]]:
    """One row per index cell: recall against exact search, the first metric and its change from
    flat search over the same vectors (``*``: paired test p < alpha), build time, latency, memory."""
    m = result.metrics[0]
    ks = _recall_ks(result)
    headers = (
        ["cell", "index (as built)", "dim"]
        + [f"recall@{k} vs exact" for k in ks]
        + [
            m,
            f"Δ {m} vs flat [95% CI]",
            "build s",
            "query p50/p95 ms",
            "batch p50/p95 ms",
            "bytes/vector",
            "1M vectors",
        ]
    )
    rows = []
    for c in index_cells(result):
        ix = c.index
        if ix is None:
            continue
        r = ix.report
        star = "*" if ix.p_vs_flat[m] < result.alpha else ""
        rows.append(
            [c.cell.name, r.effective, str(r.dim)]
            + [f"{r.recall[k]:.4f}" if k in r.recall else "" for k in ks]
            + [
                f"{c.result.metrics[m]:.4f}",
                _delta_ci(ix, m) + star,
                f"{r.build_seconds:.3f}",
                f"{r.query_latency.p50_ms:.3f}/{r.query_latency.p95_ms:.3f}",
                f"{r.batch_latency.p50_ms:.2f}/{r.batch_latency.p95_ms:.2f} (x{r.batch_size})",
                f"{r.bytes_per_vector:.1f}",
                human_bytes(r.bytes_1m_vectors),
            ]
        )
    return headers, rows


def _delta_ci(ix: IndexCell, metric: str) -> str:
    ci = ix.vs_flat[metric].ci
    return f"{ci.delta:+.4f} [{ci.low:+.4f}, {ci.high:+.4f}]"


def matryoshka_rows(result: SweepResult) -> tuple[list[str], list[list[str]]] | None:
    """Dimension (rows) x index (columns): the first metric and bytes per vector, when the index
    cells span two or more dimensions; None otherwise."""
    cells = index_cells(result)
    dims = sorted({c.result.contract.dim for c in cells}, reverse=True)
    if len(dims) < 2:
        return None
    m = result.metrics[0]
    kinds = list(dict.fromkeys(c.cell.label("index") or "" for c in cells))
    table = {(c.result.contract.dim, c.cell.label("index") or ""): c for c in cells}
    rows = []
    for d in dims:
        row = [str(d)]
        for k in kinds:
            c = table.get((d, k))
            row.append(
                f"{c.result.metrics[m]:.4f} · {c.index.report.bytes_per_vector:.0f} B"
                if c is not None and c.index is not None
                else ""
            )
        rows.append(row)
    return [f"dim \\ index ({m} · bytes/vector)", *kinds], rows


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points (cost, quality) no other point beats: cheaper or as cheap and better
    or as good, strictly in one. Ordered by cost."""
    front = []
    for i, (cost, quality) in enumerate(points):
        dominated = any(
            c <= cost and q >= quality and (c < cost or q > quality) for j, (c, q) in enumerate(points) if j != i
        )
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: (points[i][0], -points[i][1]))


def index_figures(result: SweepResult) -> list[tuple[str, Figure]]:
    """Pareto plots: quality (the first metric, and recall@10 against exact) against bytes per
    vector and against the median single-query latency; one point per index cell."""
    from ...reports.html import pareto_chart

    cells = [c for c in index_cells(result) if c.index is not None]
    if not cells:
        return []
    m = result.metrics[0]
    k = min(_recall_ks(result))
    labels = [c.cell.name.replace("index=", "") for c in cells]
    groups = [c.cell.label("index") or "" for c in cells]
    quality = {
        m: [c.result.metrics[m] for c in cells],
        f"recall@{k} vs exact": [c.index.report.recall.get(k, float("nan")) for c in cells if c.index],
    }
    costs = {
        "bytes per vector (log)": [c.index.report.bytes_per_vector for c in cells if c.index],
        "query latency p50 (ms)": [c.index.report.query_latency.p50_ms for c in cells if c.index],
    }
    figures = []
    for xlabel, xs in costs.items():
        fig = pareto_chart(
            f"quality vs {xlabel.split(' (')[0]}",
            xlabel,
            quality,
            xs,
            labels,
            groups,
            pareto_front,
            log_x=xlabel.startswith("bytes"),
        )
        figures.append(
            (
                f"Pareto plot: quality against {xlabel.split(' (')[0]}; one point per index cell, "
                "the line joins the cells no other cell beats on both. Re-scoring cells also read float32 "
                "vectors (not counted here; they may live on disk).",
                fig,
            )
        )
    return figures


_INDEX_NOTE = (
    "Recall@k vs exact: the share of the exact (flat) search's top-k that the index's depth-k search "
    "returns, averaged over queries (ANN-benchmarks). Δ vs flat: the cell minus exact search over the "
    "same vectors, with its 95% paired bootstrap interval over queries; `*` marks p < alpha in the "
    "sweep's paired test (uncorrected). Latency: one search call, single query or "
    "one batch. 1M vectors: the spec built over one million vectors (centroids and codebooks "
    "included)."
)


def index_markdown(result: SweepResult) -> list[str]:
    """The index sections of report.md (none when no cell varies the index)."""
    if not index_cells(result):
        return []
    headers, rows = index_table_rows(result)
    parts = ["\n## Index cost\n\n", _INDEX_NOTE + "\n\n", table(headers, rows)]
    notes = {n for c in index_cells(result) if c.index for n in c.index.report.notes}
    if notes:
        parts.append("".join(f"- {n}\n" for n in sorted(notes)))
    pivot = matryoshka_rows(result)
    if pivot:
        parts += ["\n## Matryoshka x quantization\n\n", table(*pivot)]
    return parts


def index_html(result: SweepResult) -> list[str]:
    """The index sections of report.html: tables and the Pareto plots."""
    from ...reports import html as h

    if not index_cells(result):
        return []
    headers, rows = index_table_rows(result)
    parts = [h.heading("Index cost"), h.paragraph(_INDEX_NOTE.replace("`", ""), "meta"), h.table(headers, rows)]
    notes = sorted({n for c in index_cells(result) if c.index for n in c.index.report.notes})
    parts += [h.paragraph(n, "meta") for n in notes]
    pivot = matryoshka_rows(result)
    if pivot:
        parts += [h.heading("Matryoshka x quantization"), h.table(*pivot)]
    for caption, fig in index_figures(result):
        parts.append(h.figure_html(h.png_data_uri(fig), caption))
    return parts
