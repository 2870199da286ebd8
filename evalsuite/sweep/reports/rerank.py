"""rerank_sweep.json and report.md of a reranker sweep."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...base.io import atomic_write_json, atomic_write_text
from ...reports.markdown import table
from ...rerank.gain import StageDelta
from ..rerank_cells import RerankSweepRow


def rerank_sweep_markdown(rows: Sequence[RerankSweepRow]) -> str:
    metrics = [d.metric for d in rows[0].vs_base]
    head = (
        ["cell", "depth"]
        + [f"{m} first" for m in metrics]
        + [f"{m} reranked" for m in metrics]
        + [f"{m} vs base" for m in metrics]
    )

    def vs(d: StageDelta) -> str:
        low = d.low
        ci = f" [{low:+.4f}, {d.high:+.4f}]" if low is not None else ""
        return f"{d.delta:+.4f}{ci}"

    body = [
        [r.cell.name, r.result.depth]
        + [r.result.first.metrics[m] for m in metrics]
        + [r.result.metrics[m] for m in metrics]
        + [vs(d) for d in r.vs_base]
        for r in rows
    ]
    return (
        "# evalsuite reranker sweep\n\nOne variable at a time against the base cell; 'vs base' is the reranked "
        "metric minus the base cell's, with its 95% bootstrap interval over queries.\n\n" + table(head, body)
    )


def write_rerank_sweep_reports(rows: Sequence[RerankSweepRow], out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    return {
        "rerank_sweep.json": atomic_write_json(
            out / "rerank_sweep.json", {"schema_version": 2, "cells": [r.to_dict() for r in rows]}
        ),
        "report.md": atomic_write_text(out / "report.md", rerank_sweep_markdown(rows)),
    }
