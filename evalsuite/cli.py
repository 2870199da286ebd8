"""`evalsuite` command line: a thin shell over the pipeline."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .base.errors import EvalsuiteError
from .run.options import OUT_OPTION, RUN_OPTIONS, add_options, collect

OUT = OUT_OPTION.with_default("reports/<dataset>/<model>")


def _print_metrics(metrics: dict[str, float]) -> None:
    width = max(len(k) for k in metrics)
    for k, v in metrics.items():
        print(f"  {k:<{width}}  {v:.4f}")


def cmd_run(args: argparse.Namespace) -> int:
    if getattr(args, "reranker", None):  # two stages: retrieval, then the reranker over the top N
        from .rerank.cli import cmd_rerank

        return cmd_rerank(args)
    from .api.front import evaluate_spec
    from .reports.run_reports import default_run_dir
    from .run.options import RUN_ENDPOINT_OPTIONS
    from .run.spec import RunSpec

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
        from .reports.run_reports import result_cache_text

        print(f"scores   {result_cache_text(result.timing['result_cache'])}")
    _print_metrics(result.metrics)
    for metric, gain in result.manifest.get("retrieval", {}).get("gain", {}).items():  # a hybrid's fusion gain
        ci = gain["ci"]
        print(
            f"  fusion gain {metric} over {gain['over']}: {ci['delta']:+.4f} "
            f"(95% CI {ci['low']:+.4f} .. {ci['high']:+.4f})"
        )
    from .reports.slices import slice_lines

    for line in slice_lines(result.slice_rows(), tuple(result.metrics)):
        print(line)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0


def cmd_model_rev(args: argparse.Namespace) -> int:
    from .model import resolve_model

    info = resolve_model(args.path)
    if args.tokenizer:
        print(info.tokenizer_revision)
    else:
        print(info.revision)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evalsuite", description="Retrieval-quality gates for embedding models.")
    from .base.about import VersionAction

    parser.add_argument("--version", action=VersionAction, help="print the installed version and location, and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    p_run = sub.add_parser("run", help="evaluate one contract on one dataset and write reports")
    from .history.options import HISTORY_OPTION
    from .rerank.options import DEPTH_OPTION, RERANK_OPTIONS
    from .run.options import RUN_ENDPOINT_OPTIONS

    add_options(
        p_run.add_argument, (*RUN_OPTIONS, *RUN_ENDPOINT_OPTIONS, *RERANK_OPTIONS, DEPTH_OPTION, OUT, HISTORY_OPTION)
    )
    p_run.set_defaults(func=cmd_run)

    p_rev = sub.add_parser("model-rev", help="print the revision that pins a model directory (or cached hub model)")
    p_rev.add_argument("path", nargs="?", default=None, help="model directory or hub id (default: bundled model)")
    p_rev.add_argument("--tokenizer", action="store_true", help="print the tokenizer revision instead")
    p_rev.set_defaults(func=cmd_model_rev)

    from .canary.cli import register as register_canary
    from .late.cli import register as register_late
    from .load.cli import register as register_load
    from .rerank.cli import register as register_rerank
    from .sweep.cli import register as register_sweep

    register_sweep(sub)
    register_canary(sub)
    register_load(sub)
    register_rerank(sub)
    register_late(sub)
    from .verify.cli import register as register_verify

    register_verify(sub)
    from .audit.cli import register as register_audit

    register_audit(sub)

    from .history.cli import register as register_history

    register_history(sub)
    from .budget.cli import register as register_budget

    register_budget(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except EvalsuiteError as exc:
        print(f"evalsuite: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file-system failure the preflight could not foresee (disk full, a race): one line
        path = exc.filename2 or exc.filename  # os.replace(tmp, target) names the target second
        where = f"{path}: " if path else ""
        print(f"evalsuite: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("evalsuite: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
