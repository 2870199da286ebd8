"""The files of a two-stage run: rerank.json (both stages, the gain with its uncertainty), report.md, run.trec."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..io import atomic_write_json, atomic_write_text
from ..reports.markdown import contract_rows, table
from ..reports.trec import trec_run
from .twostage import TwoStageResult

SCHEMA_VERSION = 1


def _ci(d: Any) -> str:
    return f"[{d.low:+.4f}, {d.high:+.4f}]" if d.low is not None else "n/a (point delta)"


def _p(d: Any) -> str:
    return f"{d.p_value:.3g}" if d.p_value is not None else "n/a"


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
        parts += [
            f"\n## Rerank depth {r.depth}\n\n",
            table(
                ["metric", "first stage", "reranked", "gain", "95% CI of the gain", "p"],
                [(d.metric, d.first, d.reranked, f"{d.delta:+.4f}", _ci(d), _p(d)) for d in r.deltas],
            ),
        ]
    parts += [
        "\n## Reranker contract\n\n",
        table(["field", "value"], contract_rows(r0.contract.to_dict())),
        "\n## Reranker timing\n\n",
        table(["step", "value"], [(k, v) for k, v in r0.timing.items() if not isinstance(v, dict)]),
    ]
    return "".join(parts)


def two_stage_dict(results: Sequence[TwoStageResult]) -> dict[str, Any]:
    r0 = results[0]
    return {
        "schema_version": SCHEMA_VERSION,
        "manifest": r0.first.manifest,
        "dataset": r0.first.dataset.identity.to_dict(),
        "depths": [r.to_dict() for r in results],
    }


def write_two_stage_reports(results: Sequence[TwoStageResult], out_dir: str | Path) -> dict[str, Path]:
    """``rerank.json`` (every depth), ``report.md``, ``run.trec`` (deepest depth), ``first_stage.trec``, and the first
    stage's own run files (results.json, manifest.json, report.md, run.trec) under ``first_stage/``."""
    from ..reports.run_reports import write_run_reports

    out = Path(out_dir)
    deepest = max(results, key=lambda r: r.depth)
    first_files = {f"first_stage/{k}": v for k, v in write_run_reports(deepest.first, out / "first_stage").items()}
    return {
        **first_files,
        "rerank.json": atomic_write_json(out / "rerank.json", two_stage_dict(results)),
        "report.md": atomic_write_text(out / "report.md", two_stage_markdown(results)),
        "run.trec": atomic_write_text(out / "run.trec", trec_run(deepest.ranking)),
        "first_stage.trec": atomic_write_text(out / "first_stage.trec", trec_run(deepest.first.ranking)),
    }
