"""`evalsuite audit --index URI [--ids PATH] [run options] [--baseline-index URI] [--out DIR]`.

Audits what an ingest job wrote into a vector index against the pinned reference: prints each verdict as it
comes, then the verdict, the worst ids and the diagnosis; writes audit.json and report.md. Exit 0 when every
check passes, 1 when one fails, 2 on a usage or input error (an EvalsuiteError, see :mod:`evalsuite.cli`).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

from ..base.io import path_name
from ..base.jobs import Job
from ..run.options import OUT_OPTION, Option
from .job import AUDIT_OPTIONS

OUT = OUT_OPTION.with_default("reports/audit/<index name>")


def options() -> tuple[Option, ...]:
    from .stores import plugin_help

    added = plugin_help()  # installed plug-in stores, named in --index's help
    return (*(dataclasses.replace(o, help=o.help + added) if o.dest == "index_uri" else o for o in AUDIT_OPTIONS), OUT)


def say(text: str) -> None:
    print(text, flush=True)


def _default_out(uri: str) -> Path:
    tail = re.sub(r"\?.*$", "", uri).rstrip("/").rsplit("/", 1)[-1].split(":")[-1]
    return Path("reports") / "audit" / path_name(tail, "index")


def cmd_audit(args: argparse.Namespace) -> int:
    from .job import run_audit_job
    from .report import terminal_lines, write_reports

    out = Path(args.out) if args.out else _default_out(args.index_uri or "")
    report = run_audit_job(args, out, say=say)
    paths = write_reports(report, out)
    for line in terminal_lines(report):
        say(line)
    say(f"wrote {', '.join(str(p) for p in paths.values())}")
    return report.exit_status


def _pytest_part() -> object:
    from .items import PYTEST_PART

    return PYTEST_PART


JOB = Job(
    "audit",
    help="audit a built vector index (FAISS, pgvector, LanceDB) against the reference that should have made it",
    options=options,
    run=cmd_audit,
    exit_codes={0: "every check passed", 1: "a check failed"},
    pytest=_pytest_part,
)
