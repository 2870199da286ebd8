"""The files of one `evalsuite sweep`: sweep.json, report.md and a self-contained report.html
(written by `sweep_json.py`, `sweep_markdown.py` and `sweep_html.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..io import atomic_write_json, atomic_write_text

if TYPE_CHECKING:
    from ..sweep.results import SweepResult

from .sweep_html import sweep_html
from .sweep_json import sweep_to_dict
from .sweep_markdown import sweep_markdown
from .sweep_markdown import sweep_table_rows as sweep_table_rows  # re-exported for the sweep CLI


def write_sweep_reports(result: SweepResult, out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    return {
        "sweep.json": atomic_write_json(out / "sweep.json", sweep_to_dict(result)),
        "report.md": atomic_write_text(out / "report.md", sweep_markdown(result)),
        "report.html": atomic_write_text(out / "report.html", sweep_html(result)),
    }
