"""The files of a two-stage run: results.json (the first stage at the top, as every run writes it, and the reranked
stage with its gain and uncertainty per depth under ``reranked``), manifest.json, report.md, report.html
(self-contained: both stages side by side and the gain with its 95% CI per depth, as tables and plots), run.trec."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..base.io import atomic_write_json, atomic_write_text
from ..reports.markdown import contract_rows, table
from ..reports.trec import trec_run
from .twostage import TwoStageResult


def _ci(d: Any) -> str:
    return f"[{d.low:+.4f}, {d.high:+.4f}]" if d.low is not None else "n/a (point delta)"


def _p(d: Any) -> str:
    return f"{d.p_value:.3g}" if d.p_value is not None else "n/a"


GAIN_HEADERS = ["metric", "first stage", "reranked", "gain", "95% CI of the gain", "p"]


def gain_rows(r: TwoStageResult) -> list[tuple[object, ...]]:
    return [(d.metric, d.first, d.reranked, f"{d.delta:+.4f}", _ci(d), _p(d)) for d in r.deltas]


def timing_rows(r: TwoStageResult) -> list[tuple[str, object]]:
    """The timing's scalars; for a reranker, the pairs its model scored and what the score cache served."""
    rows: list[tuple[str, object]] = [(k, v) for k, v in r.timing.items() if not isinstance(v, dict)]
    reranker = r.timing.get("reranker")
    if isinstance(reranker, dict):
        cache = reranker.get("cache")
        served = f"{cache['hits']} / {cache['misses']}, {cache['corrupt']} corrupt" if cache else "cache off"
        rows += [("pairs through the reranker model", reranker.get("pairs")), ("score cache hits / misses", served)]
    return rows


def two_stage_markdown(results: Sequence[TwoStageResult]) -> str:
    r0 = results[0]
    first = r0.first
    parts = [
        "# evalsuite two-stage run\n\n",
        f"First stage **{first.contract.model}** at `{first.contract.model_revision[:16]}`, reranker "
        f"**{r0.contract.model}** at `{r0.contract.model_revision[:16]}`, dataset **{first.dataset.identity.name}** "
        f"({len(first.dataset.query_ids)} queries).\n",
    ]
    for r in results:
        parts += [f"\n## Rerank depth {r.depth}\n\n", table(GAIN_HEADERS, gain_rows(r))]
    parts += [
        "\n## Reranker contract\n\n",
        table(["field", "value"], contract_rows(r0.contract.to_dict())),
        "\n## Reranker timing\n\n",
        table(["step", "value"], timing_rows(r0)),
    ]
    return "".join(parts)


def two_stage_html(results: Sequence[TwoStageResult]) -> str:
    """The two-stage run as one self-contained page: per depth, both stages and the gain with its CI (a table),
    a plot of both stages side by side and a plot of the gains with their CIs as error bars."""
    from ..reports import html as h

    r0 = results[0]
    metrics = [d.metric for d in r0.deltas]
    depths = [f"depth {r.depth}" for r in results]
    by_depth = dict(zip(depths, results, strict=True))
    stages = h.bar_chart(
        "first stage and reranked, per rerank depth",
        metrics,
        depths,
        {
            "first stage": {c: r.first.metrics for c, r in by_depth.items()},
            "reranked": {c: r.metrics for c, r in by_depth.items()},
        },
        r0.first.metrics,
        None,
        errors={"reranked": {c: _bands(r, around="first") for c, r in by_depth.items()}},
        base_label="first stage",
    )
    gains = h.delta_chart(
        "gain of the reranker (reranked - first stage)",
        metrics,
        depths,
        {c: {d.metric: d.delta for d in r.deltas} for c, r in by_depth.items()},
        {c: _bands(r, around="zero") for c, r in by_depth.items()},
    )
    parts = [
        h.heading("evalsuite two-stage run", 1),
        h.paragraph(
            f"First stage {r0.first.contract.model} at revision {r0.first.contract.model_revision}; reranker "
            f"{r0.contract.model} at revision {r0.contract.model_revision}; dataset {r0.first.dataset.identity.name} "
            f"({len(r0.first.dataset.query_ids)} queries).",
            "meta",
        ),
    ]
    for r in results:
        parts += [
            h.heading(f"Rerank depth {r.depth}"),
            h.table(GAIN_HEADERS, gain_rows(r), cell_classes=[_gain_classes(d) for d in r.deltas]),
        ]
    parts += [
        h.heading("Plots"),
        h.figure_html(
            h.png_data_uri(stages),
            "Both stages per rerank depth; the dashed red line is the first stage. Error bars: the 95% "
            "bootstrap CI of the gain, around the reranked value.",
        ),
        h.figure_html(
            h.png_data_uri(gains),
            "The gain per metric and rerank depth; error bars: its 95% bootstrap CI (paired over queries).",
        ),
        h.heading("Reranker contract"),
        h.table(["field", "value"], contract_rows(r0.contract.to_dict())),
        h.heading("First-stage contract"),
        h.table(["field", "value"], contract_rows(r0.first.contract.to_dict())),
        h.heading("Reranker timing"),
        h.table(["step", "value"], timing_rows(r0)),
    ]
    return h.page("evalsuite two-stage run", parts)


def _bands(r: TwoStageResult, *, around: str) -> dict[str, tuple[float, float]]:
    """Per metric with a CI: the gain's interval, shifted to sit around the first stage's value or around zero."""
    out = {}
    for d in r.deltas:
        if d.low is not None and d.high is not None:
            base = d.first if around == "first" else 0.0
            out[d.metric] = (base + d.low, base + d.high)
    return out


def _gain_classes(d: Any) -> tuple[str, ...]:
    """Colour the gain when its CI excludes zero."""
    sure = d.low is not None and (d.low > 0 or d.high < 0)
    return ("", "", "", ("up" if d.delta > 0 else "down") if sure else "", "", "")


def two_stage_dict(results: Sequence[TwoStageResult]) -> dict[str, object]:
    """results.json of a two-stage run: the first stage as any run's results.json (one first stage serves every
    depth), and ``reranked``: per depth, the reranked stage, its gain over the first stage with the CI, timing."""
    firsts = {id(r.first) for r in results}
    if len(firsts) != 1:
        raise ValueError("a two-stage run's depths share one first stage")
    return {**results[0].first.to_dict(), "reranked": [r.reranked_dict() for r in results]}


def write_two_stage_reports(results: Sequence[TwoStageResult], out_dir: str | Path) -> dict[str, Path]:
    """``results.json`` (both stages, every depth), ``manifest.json``, ``report.md``, ``report.html``,
    ``run.trec`` (the deepest depth's reranked ranking) and ``first_stage.trec``."""
    out = Path(out_dir)
    deepest = max(results, key=lambda r: r.depth)
    return {
        "results.json": atomic_write_json(out / "results.json", two_stage_dict(results)),
        "manifest.json": atomic_write_json(out / "manifest.json", deepest.first.manifest),
        "report.md": atomic_write_text(out / "report.md", two_stage_markdown(results)),
        "report.html": atomic_write_text(out / "report.html", two_stage_html(results)),
        "run.trec": atomic_write_text(out / "run.trec", trec_run(deepest.ranking)),
        "first_stage.trec": atomic_write_text(out / "first_stage.trec", trec_run(deepest.first.ranking)),
    }
