"""`evalsuite rerank`: a thin shell over these packages (`rerank-sweep` is the sweep's, :mod:`evalsuite.sweep.cli`;
`rerank-canary` is the canary's, :mod:`evalsuite.canary.reranker.cli`; `late` registers itself from :mod:`evalsuite.cli`).

Exit codes: 0 done, 2 a usage or input error.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..base.jobs import Job
from ..run.options import OUT_OPTION, RUN_OPTIONS, collect
from .options import DEPTH_OPTION, RERANK_OPTIONS, rerank_settings

OPTIONS = (*RUN_OPTIONS, *RERANK_OPTIONS, DEPTH_OPTION, OUT_OPTION.with_default("reports/<dataset>/<model>+rerank"))


def rerank_spec(args: argparse.Namespace) -> Any:
    from .run import RerankSpec

    return RerankSpec.from_mapping(rerank_settings(args), source="command line")


def cmd_rerank(args: argparse.Namespace) -> int:
    from ..reports.run_reports import default_run_dir
    from ..run.spec import RunSpec
    from .reports import write_two_stage_reports
    from .run import run_two_stage

    spec = RunSpec.from_mapping(collect(args), source="command line")
    rspec = rerank_spec(args)
    depths = list(args.depths or (rspec.depth,))
    results = run_two_stage(spec, rspec, depths)
    first = results[0].first
    out = (
        Path(args.out)
        if args.out
        else Path(str(default_run_dir(first.dataset.identity.name, first.contract.model)) + "+rerank")
    )
    paths = write_two_stage_reports(results, out)
    print(f"first stage  {first.contract.model} @ {first.contract.model_revision[:16]}")
    c = results[0].contract.to_dict()
    print(
        f"reranker     {c['model']} @ {c['model_revision'][:16]} (activation {c['activation']}, "
        f"max length {c['max_length']})"
    )
    for r in results:
        print(f"depth {r.depth}")
        for d in r.deltas:
            print(f"  {d.describe()}")
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0


JOB = Job(
    "rerank",
    help="two-stage evaluation: first-stage retrieval, then a cross-encoder reranks the top N; both stages' metrics "
    "and the gain",
    options=lambda: OPTIONS,
    run=cmd_rerank,
    exit_codes={0: "both stages were scored and the reports written"},
)
