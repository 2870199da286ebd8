"""`evalsuite sweep`: the options of `evalsuite run`, plus --vary / --grid / --out; and `evalsuite rerank-sweep`:
the reranker's options too, the axes of every stage (one registry), one variable at a time."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.jobs import Job
from ..run.options import OUT_OPTION, RUN_OPTIONS, Option, collect
from .options import CHOOSE_OPTIONS, SWEEP_OPTIONS, VARY_OPTION
from .registry import RERANKER_AXES

if TYPE_CHECKING:
    from ..run.prepared import Prepared

OUT = OUT_OPTION.with_default("reports/<dataset>/<model>/sweep")


def rerank_sweep_options() -> tuple[Option, ...]:
    from ..rerank.options import DEPTH_OPTION, RERANK_OPTIONS

    out = OUT_OPTION.with_default("reports/<dataset>/<model>+rerank-sweep")
    return (*RUN_OPTIONS, *RERANK_OPTIONS, DEPTH_OPTION, VARY_OPTION, out)


def cmd_rerank_sweep(args: argparse.Namespace) -> int:
    from ..reports.run_reports import default_run_dir
    from ..rerank.options import rerank_settings
    from ..rerank.run import RerankSpec
    from ..run.spec import RunSpec
    from .reports.rerank import write_rerank_sweep_reports
    from .rerank_cells import parse_rerank_vary, run_rerank_sweep

    depths = tuple(args.depths or ())
    extra = [f"depth={','.join(map(str, depths))}"] if len(depths) > 1 else []  # the others are depth cells
    axes = parse_rerank_vary([*(args.vary or []), *extra])
    spec = RunSpec.from_mapping(collect(args, RUN_OPTIONS), source="command line")
    settings = {**rerank_settings(args), **({"depth": max(depths)} if depths else {})}
    rspec = RerankSpec.from_mapping(settings, source="command line")
    rows = run_rerank_sweep(spec, rspec, axes)
    first = rows[0].result.first
    out = (
        Path(args.out)
        if args.out
        else Path(str(default_run_dir(first.dataset.identity.name, first.contract.model)) + "+rerank-sweep")
    )
    paths = write_rerank_sweep_reports(rows, out)
    for row in rows:
        gains = ", ".join(f"{d.metric} {d.reranked:.4f} ({d.delta:+.4f} vs base)" for d in row.vs_base)
        print(f"{row.cell.name:<28} {gains}")
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from ..run.spec import RunSpec
    from . import parse_vary
    from .job import run_sweep_job
    from .reports import sweep_table_rows, write_sweep_reports
    from .reports.index import index_table_rows, matryoshka_rows
    from .reports.markdown import marks_legend, result_cache_line
    from .reports.slices import sweep_slice_lines

    spec = RunSpec.from_mapping(collect(args, RUN_OPTIONS), source="command line")
    axes = parse_vary(args.vary or [])
    grid = bool(args.grid)
    rule = None
    if args.choose:
        from .choose import parse_choose

        rule = parse_choose(args.choose, args.cost or "bytes")
        if rule.metric not in spec.metrics:
            spec = spec.replace(metrics=(*spec.metrics, rule.metric))
    job = run_sweep_job(
        spec,
        axes,
        grid,
        Path(args.out) if args.out else None,
        default_out=_default_out,
        note=lambda line: print(line, file=sys.stderr),
    )
    result, prepared, cells = job.result, job.prepared, job.cells
    out = job.out or _default_out(prepared)  # the job made and checked it
    if rule is not None:
        import dataclasses

        from .ship import choose_cells

        result = dataclasses.replace(result, choice=choose_cells(result, rule))
    paths = write_sweep_reports(result, out)
    ident = prepared.dataset.identity
    st = result.stats
    print(f"model    {prepared.model.name} @ {prepared.contract.model_revision[:16]}")
    print(f"dataset  {ident.name} ({ident.n_documents} documents, {ident.n_queries} queries)")
    print(
        f"cells    {len(cells)} ({'grid' if grid else 'one variable at a time'}); forward passes "
        f"{st.passes_by_role['query']} query + {st.passes_by_role['document']} document; texts encoded "
        f"{sum(st.texts_encoded_by_role.values())}"
        + (f"; cache hits {st.cache['hits']}, misses {st.cache['misses']}" if st.cache else "")
    )
    print(result_cache_line(st.result_cache))
    _print_table(*sweep_table_rows(result))
    print(marks_legend(result).replace("`", ""))
    index_headers, index_rows = index_table_rows(result)
    if index_rows:
        print("index cost (recall against exact flat search; Δ against flat over the same vectors)")
        _print_table(index_headers, index_rows)
        pivot = matryoshka_rows(result)
        if pivot:
            _print_table(*pivot)
    for line in sweep_slice_lines(result):
        print(line)
    if result.choice is not None:
        from .reports.choice import choice_legend, choice_rows

        print(f"choice: {result.choice.sentence()}")
        _print_table(*choice_rows(result.choice))
        print(choice_legend(result.choice))
    late = [m for m in (result.store.problems if result.store else []) if m not in result.warnings]  # the reports'
    for w in [*result.warnings, *late]:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0


def _default_out(prepared: Prepared) -> Path:
    from ..reports.run_reports import default_run_dir

    return default_run_dir(prepared.dataset.identity.name, prepared.model.name) / "sweep"


def _print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    for row in [headers, *rows]:
        print("  " + "  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)))


JOB = Job(
    "sweep",
    help="vary one setting at a time (or a grid) around the base contract; write sweep.json, report.md and report.html",
    options=lambda: (*RUN_OPTIONS, *SWEEP_OPTIONS, *CHOOSE_OPTIONS, OUT),
    run=cmd_sweep,
    exit_codes={0: "every cell was scored and the reports written"},
)
RERANK_SWEEP_JOB = Job(
    "rerank-sweep",
    help=f"reranker experiments, one variable at a time ({', '.join(RERANKER_AXES)} and the first stage's axes); "
    "--rerank-depth: the base depth (several: the deepest is the base, the others are depth cells)",
    options=rerank_sweep_options,
    run=cmd_rerank_sweep,
    exit_codes={0: "every cell was scored and the reports written"},
)
