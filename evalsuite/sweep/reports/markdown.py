"""A sweep as Markdown (report.md), and the result, CI and p-value tables the HTML report shares."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...reports.markdown import contract_rows, table
from .choice import choice_markdown
from .data import index_bytes_per_document, shows_storage, storage
from .index import index_markdown
from .slices import sweep_slices_markdown

if TYPE_CHECKING:
    from ..results import CellResult, SweepResult


def _delta_text(c: CellResult, m: str, alpha: float) -> str:
    if c.cell.same_as_base:
        return "="
    return f"{c.delta[m]:+.4f}{'*' if c.significant(alpha)[m] else ''}"


def marks_legend(result: SweepResult) -> str:
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


def bytes_text(x: float | None) -> str:
    """Index bytes per document as the table shows them: whole bytes without decimals, else two; "-" unknown."""
    if x is None:
        return "-"
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.2f}"


def _index_bytes(result: SweepResult, r: Any) -> str:
    n = len(result.base.dataset.doc_ids)
    return bytes_text(index_bytes_per_document(r.contract, r.manifest.get("retrieval"), n))


def sweep_table_rows(result: SweepResult) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the main table: base first, then each cell with value and Δ per metric
    (``*`` when the paired test against the base is significant) and the index bytes per document of its
    retriever (:func:`.data.index_bytes_per_document`), beside its quality."""
    headers = ["cell"] + [h for m in result.metrics for h in (m, f"Δ {m}")] + ["index bytes/doc"]
    base = result.base
    rows: list[list[str]] = [
        ["base"] + [x for m in result.metrics for x in (f"{base.metrics[m]:.4f}", "")] + [_index_bytes(result, base)]
    ]
    for c in result.cells:
        name = c.cell.name + (" (= base)" if c.cell.same_as_base else "")
        rows.append(
            [name]
            + [x for m in result.metrics for x in (f"{c.result.metrics[m]:.4f}", _delta_text(c, m, result.alpha))]
            + [_index_bytes(result, c.result)]
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
    lines.append(result_cache_line(st.result_cache))
    return lines


def result_cache_line(summary: dict[str, Any] | None) -> str:
    """Which contracts' search and scores, and which cells' statistics, were read back from the result cache."""
    if summary is None:
        return "result cache: off (--no-cache): every contract searched and scored in this run"
    c, s = summary["contracts"], summary["statistics"]
    reused = (
        f"{c['hits']} of {c['hits'] + c['misses']} contracts' rankings and scores"
        f" and {s['hits']} of {s['hits'] + s['misses']} cells' statistics reused"
    )
    if c["hits"]:
        reused += " (computed by an earlier run on identical inputs; --no-cache recomputes them)"
    return f"result cache: {reused}"


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
        marks_legend(result) + "\n\n",
        "## Results\n\n",
        table(headers, rows),
        *choice_markdown(result),
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
