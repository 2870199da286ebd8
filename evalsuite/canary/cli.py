"""`evalsuite canary --endpoint URL [run options] [canary options] [--out DIR]`, and with
`--reranker-endpoint URL --reranker DIR` the reranker checks (:mod:`.reranker.cli`) too; `rerank-canary` is
its alias for the reranker alone. With `--retrieval sparse` the endpoint is a served sparse one (vLLM's `/pooling`
token_classify or TEI's `/embed_sparse`, `--sparse-api`) and the sparse family's checks run (:mod:`.sparse`). `--endpoint` repeated: a fleet, every check against each member on its own
(:mod:`.fleet`), each failing member named.

Prints each verdict as it comes, writes canary.json and report.md (the reranker's canary.json and
report.md in ``<out>/reranker`` when both run); exit 0 when every check passes, 1 when one fails (of
either family, on any member), 2 on a usage or input error (raised as EvalsuiteError, see evalsuite.cli).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base.io import path_name, url_host
from ..base.jobs import Job
from ..run.options import OUT_OPTION, RUN_OPTIONS, Option, collect
from .embedding.options import CANARY_FLEET_OPTIONS
from .output import finish, finish_fleet, say
from .rounds import INTERVAL, ROUNDS

OUT = OUT_OPTION.with_default("reports/canary/<host-port>")


def options() -> tuple[Option, ...]:
    from ..rerank.options import RERANK_OPTIONS
    from .reranker.options import RERANK_CANARY_OPTIONS
    from .sparse.options import SPARSE_CANARY_OPTIONS

    # --api-key-env: one, for every family
    return (
        *RUN_OPTIONS,
        *CANARY_FLEET_OPTIONS,
        OUT,
        ROUNDS,
        INTERVAL,
        *SPARSE_CANARY_OPTIONS,
        *RERANK_OPTIONS,
        *RERANK_CANARY_OPTIONS,
    )


def _default_out(endpoint: str, members: int = 1) -> Path:
    """reports/canary/<host-port> of the (first) endpoint; ``-fleet-N`` added for a fleet of N."""
    name = path_name(url_host(endpoint), "endpoint")
    return Path("reports") / "canary" / (name if members == 1 else f"{name}-fleet-{members}")


def cmd_canary(args: argparse.Namespace) -> int:
    """The embedding canary, the reranker canary, or both (the worse exit status of the two)."""
    from .reranker.cli import RerankCanaryRequest

    reranker = RerankCanaryRequest.from_args(args)  # its usage errors come before either canary runs
    if reranker is None:
        return endpoint_canary(args)  # without --endpoint either: the usage error
    if args.endpoint is None:
        return reranker.run(Path(args.out) if args.out else None)
    code = endpoint_canary(args)
    return max(code, reranker.run(Path(args.out) / "reranker" if args.out else None))


def endpoint_canary(args: argparse.Namespace) -> int:
    """The ``--endpoint`` canary of the run's retriever: the sparse family's for ``--retrieval sparse``
    (:mod:`.sparse.job`), else the embedding canary."""
    from ..run.spec import RunSpec
    from .sparse.job import is_sparse, run_sparse_job, sparse_settings

    spec = RunSpec.from_mapping(collect(args), source="command line")
    if not is_sparse(spec):
        return embedding_canary(args)
    settings = sparse_settings(args)
    out = Path(args.out) if args.out else _default_out(settings.endpoint)
    run = run_sparse_job(args, spec, out, settings=settings, say=say)
    return finish(run.worst(), out)


def embedding_canary(args: argparse.Namespace) -> int:
    """Every check against each ``--endpoint`` URL; with several (a fleet), each member on its own, named."""
    from .rounds import canary_members, rounds_of, run_embedding_canary

    rounds_of(args)  # bounded before anything else is read
    members = canary_members(args)
    out = Path(args.out) if args.out else _default_out(members[0].endpoint, len(members))
    run = run_embedding_canary(args, out, members=members, say=say, note=lambda line: print(line, file=sys.stderr))
    if not run.fleet:
        return finish(run.worst(), out, run.runs[0])
    return finish_fleet(run.fleet_outcome(), out)


JOB = Job(
    "canary",
    help="check a served /v1/embeddings endpoint (--endpoint; with --retrieval sparse a served sparse one) and/or a "
    "served reranker (--reranker-endpoint) against the local reference",
    options=options,
    run=cmd_canary,
    exit_codes={0: "every check passed", 1: "a check failed (of either family, on any member)"},
)
