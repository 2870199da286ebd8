"""`evalsuite history [DIR]`: the releases a history directory holds, as a table per model lineage (the declared
``model_name``, else the directory's or hub id's name; each release's directory or hub id in its row) and dataset, and a
self-contained HTML page with one plot per metric (CI bands, gate thresholds). DIR defaults to ``history`` of
./evalsuite.toml (or ``[tool.evalsuite]`` of ./pyproject.toml). Also: the record `evalsuite run --history DIR`
adds. Exit 0, or 2 for a usage error or an unreadable record (the message names the file)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..base.errors import SpecError
from ..base.jobs import Job, Positional
from ..base.options import Option

OPTIONS: tuple[Option, ...] = (
    Option("--model", "only this model lineage's releases (its model_name, or its name as recorded)"),
    Option("--dataset", "only this dataset's releases"),
    Option("--html", "write the HTML page here (default: DIR/../reports/history.html)"),
)


def history_dir(given: str | None, cwd: Path) -> Path:
    """DIR as given, else the spec file's ``history`` (relative to the spec file)."""
    if given:
        return Path(given)
    from ..base.specfile import find_spec_file

    found = find_spec_file(cwd)
    value = found[1].get("history") if found else None
    if not isinstance(value, str) or not value:
        raise SpecError('evalsuite history: no history directory; pass DIR or set history = "DIR" in evalsuite.toml')
    assert found is not None
    return found[0].parent / value


def cmd_history(args: argparse.Namespace) -> int:
    from ..base.io import atomic_write_text
    from .plot import history_html
    from .store import HistoryStore
    from .table import text_table

    root = history_dir(args.dir, Path.cwd())
    if not root.is_dir():
        raise SpecError(f"history directory {root} does not exist; a gated session with --history {root} makes it")
    series = {
        key: records
        for key, records in HistoryStore(root).series().items()
        if (args.model is None or key[0] == args.model) and (args.dataset is None or key[1] == args.dataset)
    }
    if not series:
        print(f"{root}: no release recorded" + (" for that model / dataset" if args.model or args.dataset else ""))
        return 0
    for (model, dataset), records in series.items():
        sources = sorted({r.source for r in records if r.source})
        where = f" from {len(sources)} directories / hub ids" if len(sources) > 1 else ""
        print(f"{model} on {dataset}: {len(records)} release(s){where}")
        for line in text_table(records):
            print("  " + line)
    out = Path(args.html) if args.html else root.parent / "reports" / "history.html"
    atomic_write_text(out, history_html(series, str(root)))
    print(f"wrote {out}")
    return 0


JOB = Job(
    "history",
    help="the release history: a table of releases and an HTML page with a plot per metric",
    options=lambda: OPTIONS,
    run=cmd_history,
    exit_codes={0: "the table printed and the page written (or no release recorded)"},
    positional=Positional("dir", "history directory (default: history of ./evalsuite.toml)"),
)
