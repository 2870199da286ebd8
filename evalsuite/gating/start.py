"""From the plugin's parsed options (and a spec file) to a prepared session, or None when the
session has no evalsuite settings at all (the plugin then stays inert)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import SpecError
from ..run.options import RUN_OPTIONS, Option, collect
from .options import GATE_OPTIONS

if TYPE_CHECKING:
    from ..canary.embedding.settings import CanarySettings
    from ..canary.reranker.settings import RerankCanarySettings
    from .plan import SessionPlan
    from .session import GateSession

PREFIX = "evalsuite_"


def rerank_options() -> tuple[Option, ...]:
    from ..rerank.options import DEPTH_OPTION, RERANK_OPTIONS

    return (*RERANK_OPTIONS, DEPTH_OPTION)


def rerank_flags(values: object) -> dict[str, object]:
    """The ``--reranker*`` and ``--rerank-depth`` flags given, as RerankSpec fields (``depths`` a tuple)."""
    from ..rerank.options import DEPTH_OPTION, rerank_settings

    return {**rerank_settings(values, PREFIX), **collect(values, (DEPTH_OPTION,), PREFIX)}


def plugin_options() -> tuple[tuple[tuple[Option, ...], str], ...]:
    """Every option the plugin adds with the prefix of its destination, in the order `pytest --help` shows them."""
    from ..canary.embedding.options import CANARY_FLEET_OPTIONS
    from ..canary.reranker.options import RERANK_CANARY_OPTIONS
    from ..sweep.options import SWEEP_OPTIONS

    return (
        ((*RUN_OPTIONS, *GATE_OPTIONS, *SWEEP_OPTIONS), PREFIX),
        (rerank_options(), PREFIX),
        (CANARY_FLEET_OPTIONS, PREFIX),
        (RERANK_CANARY_OPTIONS, PREFIX),
    )


def start_session(
    values: argparse.Namespace, cwd: Path, *, shared_dir: Path | None, worker: str, requested: bool = False
) -> GateSession | None:
    """``values``: pytest's ``config.option``; ``requested``: a job's part was asked for (``--audit-index``,
    ``--budget``), which needs a session even without any other setting. Raises EvalsuiteError for bad settings."""
    from ..base.specfile import find_spec_file
    from ..canary.embedding.options import CANARY_FLEET_OPTIONS
    from ..sweep.options import SWEEP_OPTIONS
    from .plan import build_plan

    run_flags = collect(values, RUN_OPTIONS, PREFIX)
    session_flags = collect(values, GATE_OPTIONS + SWEEP_OPTIONS, PREFIX)
    found = find_spec_file(cwd, session_flags.pop("spec", None))
    gate_endpoint = bool(session_flags.pop("gate_endpoint", False))
    canary_flags = collect(values, CANARY_FLEET_OPTIONS, PREFIX)
    reranker = rerank_flags(values)
    rerank_canary = rerank_canary_settings(values)
    if not run_flags and not session_flags and not canary_flags and not reranker and found is None and not requested:
        return None
    plan = build_plan(
        file_settings=found[1] if found else None,
        file_path=found[0] if found else None,
        run_flags=run_flags,
        session_flags=session_flags,
        cwd=cwd,
        rerank_flags=reranker,
    )
    if rerank_canary is not None and plan.rerank is None:  # neither --reranker DIR nor a [rerank] table
        from ..canary.reranker.settings import NEEDS_RERANKER

        raise SpecError(NEEDS_RERANKER)
    canary: tuple[CanarySettings, ...] | None = None
    if canary_flags.keys() - {"api_key_env"} or (canary_flags and rerank_canary is None):  # the key: both canaries
        from ..canary.embedding.settings import CanarySettings

        canary = CanarySettings.members_from_values(canary_flags)  # one per --endpoint URL (a fleet's members)
        canary[0].api_key()  # a configured but unset key variable is an error now, not mid-session
        from ..canary.sparse.job import is_sparse

        sparse = [dp.name for dp in plan.datasets if is_sparse(dp.spec)]
        if sparse:  # the session's canary items are the embedding family's: a sparse endpoint is the CLI's
            raise SpecError(
                f"--endpoint with retrieval sparse (dataset {sparse[0]}): the pytest canary items check a dense "
                "/v1/embeddings endpoint; check a served sparse one with `evalsuite canary --endpoint URL "
                "--retrieval sparse` (or evalsuite.canary(..., retrieval='sparse'))"
            )
    return prepared_session(
        plan,
        shared_dir=shared_dir,
        worker=worker,
        canary=canary,
        rerank_canary=rerank_canary,
        gate_endpoint=gate_endpoint,
    )


def rerank_canary_settings(values: object) -> RerankCanarySettings | None:
    """``--reranker-endpoint`` and its options (None without it); a usage error for an unset key variable."""
    from ..canary.reranker.options import READ_OPTIONS
    from ..canary.reranker.settings import RerankCanarySettings

    settings = RerankCanarySettings.from_values(collect(values, READ_OPTIONS, PREFIX))
    if settings is not None:
        settings.api_key()
    return settings


def default_session(cwd: Path) -> GateSession:
    """The bundled model on the fixture dataset: what the fixtures use when no setting is given."""
    from .plan import build_plan

    plan = build_plan(file_settings=None, file_path=None, run_flags={}, session_flags={}, cwd=cwd)
    return prepared_session(plan, shared_dir=None, worker="main")


def prepared_session(
    plan: SessionPlan,
    *,
    shared_dir: Path | None,
    worker: str,
    canary: CanarySettings | tuple[CanarySettings, ...] | None = None,
    rerank_canary: RerankCanarySettings | None = None,
    gate_endpoint: bool = False,
) -> GateSession:
    from . import preflight
    from .session import GateSession
    from .shared import ComputeOnce

    preflight.session_plan(plan)  # paths it writes, gates vs metrics: before loading anything
    from .releases import check_history

    check_history(plan)  # the history directory writable, its records readable, history gates have one
    session = GateSession(
        plan,
        ComputeOnce(shared_dir),
        canary=canary,
        rerank_canary=rerank_canary,
        worker=worker,
        gate_endpoint=gate_endpoint,
    )
    session.prepare_all()
    for name, baseline in session.baselines.items():
        gates = session.dataset_policy(name).gates
        preflight.baseline_metrics(name, gates, baseline.path, tuple(baseline.metrics))
        preflight.baseline_reranked(name, gates, baseline)
    return session
