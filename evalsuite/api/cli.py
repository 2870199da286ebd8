"""`evalsuite run [run options] [--reranker DIR ...] [--out DIR] [--history DIR]`: one contract on one dataset through
the front door's run job (:func:`evalsuite.api.front.evaluate_spec`, which ``evalsuite.evaluate()`` runs too), its
metrics, slices and the files it wrote printed; with ``--reranker`` the two-stage evaluation of `evalsuite rerank`.
Exit 0, or 2 for a usage or input error (an EvalsuiteError, see :mod:`evalsuite.cli`).

Its pytest part is the gated session itself (`evalsuite.gating`): the run's options, the gates', the sweeps', the
reranker's and the canary's, which ``pytest --model-rev REV`` reads into one ``GateSession``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base.jobs import Job
from ..base.options import Option
from ..run.options import OUT_OPTION, RUN_OPTIONS, collect

OUT = OUT_OPTION.with_default("reports/<dataset>/<model>")


def options() -> tuple[Option, ...]:
    from ..history.options import HISTORY_OPTION
    from ..rerank.options import DEPTH_OPTION, RERANK_OPTIONS
    from ..run.options import RUN_ENDPOINT_OPTIONS

    return (*RUN_OPTIONS, *RUN_ENDPOINT_OPTIONS, *RERANK_OPTIONS, DEPTH_OPTION, OUT, HISTORY_OPTION)


def _print_metrics(metrics: dict[str, float]) -> None:
    width = max(len(k) for k in metrics)
    for k, v in metrics.items():
        print(f"  {k:<{width}}  {v:.4f}")


def cmd_run(args: argparse.Namespace) -> int:
    if getattr(args, "reranker", None):  # two stages: retrieval, then the reranker over the top N
        from ..rerank.cli import cmd_rerank

        return cmd_rerank(args)
    from ..reports.run_reports import default_run_dir
    from ..run.options import RUN_ENDPOINT_OPTIONS
    from ..run.spec import RunSpec
    from .front import evaluate_spec

    spec = RunSpec.from_mapping(collect(args, (*RUN_OPTIONS, *RUN_ENDPOINT_OPTIONS)), source="command line")
    evaluation = evaluate_spec(
        spec,
        Path(args.out) if args.out else None,
        default_out=lambda p: default_run_dir(p.dataset.identity.name, p.model.name),
        history=getattr(args, "history", None),
        note=lambda line: print(line, file=sys.stderr),
    )
    prepared, result, paths = evaluation.prepared, evaluation.result, evaluation.paths
    ident = prepared.dataset.identity
    print(f"model    {prepared.model.name} @ {prepared.contract.model_revision[:16]}")
    encoder = result.manifest.get("encoder", {})
    if encoder.get("kind") == "endpoint":
        print(f"served   {encoder['served_model']} at {', '.join(encoder['urls'])}")
    if encoder.get("nodes"):  # on a Ray cluster: which nodes encoded how many rows
        nodes = ", ".join(f"{n['node_id'][:8]} ({n['address']}) {n['rows']} rows" for n in encoder["nodes"])
        print(f"ray      {len(encoder['nodes'])} node(s): {nodes}")
    if prepared.contract.retrieval != "dense":
        print(f"retrieval {prepared.contract.retrieval}")
    print(
        f"dataset  {ident.name} ({ident.n_documents} documents, {ident.n_queries} queries, "
        f"{ident.n_queries_dropped} dropped)"
    )
    if result.timing.get("result_cache", {}).get("status") == "hit":
        from ..reports.run_reports import result_cache_text

        print(f"scores   {result_cache_text(result.timing['result_cache'])}")
    _print_metrics(result.metrics)
    for metric, gain in result.manifest.get("retrieval", {}).get("gain", {}).items():  # a hybrid's fusion gain
        ci = gain["ci"]
        print(
            f"  fusion gain {metric} over {gain['over']}: {ci['delta']:+.4f} "
            f"(95% CI {ci['low']:+.4f} .. {ci['high']:+.4f})"
        )
    from ..reports.slices import slice_lines

    for line in slice_lines(result.slice_rows(), tuple(result.metrics)):
        print(line)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0


def _pytest_part() -> object:
    from ..audit.items import index_kind_only  # a store URI on --index: a usage error naming --audit-index
    from ..gating.parts import gated_session_part

    return gated_session_part(index_kind_only)


JOB = Job(
    "run",
    help="evaluate one contract on one dataset and write reports",
    options=options,
    run=cmd_run,
    exit_codes={0: "the run was scored and its reports written"},
    pytest=_pytest_part,
)
