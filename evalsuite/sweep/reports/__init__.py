"""The files of one `evalsuite sweep`: sweep.json, report.md and a self-contained report.html
(written by `data.py`, `markdown.py` and `html.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...base.io import atomic_write_json, atomic_write_text

if TYPE_CHECKING:
    from ..results import SweepResult

from .data import sweep_to_dict
from .html import page_charts, sweep_html
from .markdown import sweep_markdown
from .markdown import sweep_table_rows as sweep_table_rows  # re-exported for the sweep CLI


def write_sweep_reports(result: SweepResult, out_dir: str | Path) -> dict[str, Path]:
    """sweep.json, report.md and report.html; report.html's charts not in the result cache are drawn in worker
    processes meanwhile (:class:`evalsuite.reports.html.Charts`: the same PNGs, off the critical path)."""
    from ...reports.html import Charts

    out = Path(out_dir)
    with Charts(result.store) as charts:
        for chart, args, kwargs in page_charts(result):
            charts.start(chart, *args, **kwargs)
        return {
            "sweep.json": atomic_write_json(out / "sweep.json", sweep_to_dict(result)),
            "report.md": atomic_write_text(out / "report.md", sweep_markdown(result)),
            "report.html": atomic_write_text(out / "report.html", sweep_html(result, charts)),
        }
