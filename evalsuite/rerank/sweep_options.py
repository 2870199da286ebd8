"""`evalsuite rerank-sweep --vary AXIS=V1,V2 ...`: one variable at a time; rerank_sweep.json and report.md."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..options import OUT_OPTION, RUN_OPTIONS, add_options, collect
from .options import RERANK_OPTIONS, rerank_settings


def register_sweep(subparsers: Any) -> None:
    from .sweep import AXES

    p = subparsers.add_parser(
        "rerank-sweep",
        help="reranker experiments, one variable at a time (rerank depth, "
        "pair max length, dtype, first-stage contract)",
    )
    add_options(
        p.add_argument,
        (*RUN_OPTIONS, *RERANK_OPTIONS, OUT_OPTION.with_default("reports/<dataset>/<model>+rerank-sweep")),
    )
    p.add_argument(
        "--rerank-depth", dest="depth", type=int, default=None, metavar="N", help="base rerank depth (default: 100)"
    )
    p.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="AXIS=V1,V2",
        help="axis and values; axes: " + ", ".join(f"{a.name} ({a.help})" for a in AXES.values()),
    )
    p.set_defaults(func=cmd_rerank_sweep)


def cmd_rerank_sweep(args: argparse.Namespace) -> int:
    from ..errors import SpecError
    from ..reports.run_reports import default_run_dir
    from ..spec import RunSpec
    from .run import RerankSpec
    from .sweep import parse_vary, run_rerank_sweep
    from .sweep_report import write_sweep_reports

    if not args.vary:
        raise SpecError("rerank-sweep needs at least one --vary AXIS=V1,V2 (e.g. --vary depth=10,50,100)")
    vary = parse_vary(args.vary)
    spec = RunSpec.from_mapping(collect(args), source="command line")
    settings = rerank_settings(args)
    if args.depth is not None:
        settings["depth"] = args.depth
    rspec = RerankSpec.from_mapping(settings, source="command line")
    rows = run_rerank_sweep(spec, rspec, vary)
    first = rows[0].result.first
    out = (
        Path(args.out)
        if args.out
        else Path(str(default_run_dir(first.dataset.identity.name, first.contract.model)) + "+rerank-sweep")
    )
    paths = write_sweep_reports(rows, out)
    for row in rows:
        gains = ", ".join(f"{d.metric} {d.reranked:.4f} ({d.delta:+.4f} vs base)" for d in row.vs_base)
        print(f"{row.cell.name:<28} {gains}")
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0
