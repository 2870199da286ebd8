"""The sparse canary as one job (`evalsuite canary --endpoint URL --retrieval sparse`, ``evalsuite.canary(...,
retrieval="sparse")``): the settings read, the model and dataset prepared, every sparse check and the diagnosis
run against the one endpoint; what both print and write is this job's :class:`~evalsuite.canary.rounds.CanaryRun`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import SpecError
from ...run.options import collect

if TYPE_CHECKING:
    from ...run.spec import RunSpec
    from ..rounds import CanaryRun
    from .settings import SparseCanarySettings


def _quiet(line: str) -> None:
    return None


def is_sparse(spec: RunSpec) -> bool:
    """Whether the run's retriever is ``sparse`` (the endpoint is then checked by this family)."""
    from ...retrieval.retrievers import parse_retrieval

    return parse_retrieval(spec.retrieval).kind == "sparse"


def sparse_settings(args: argparse.Namespace) -> SparseCanarySettings:
    """The sparse canary's settings from the canary's options; usage errors (SpecError) before anything loads."""
    from ..embedding.options import CANARY_FLEET_OPTIONS
    from ..rounds import rounds_of
    from .options import SPARSE_CANARY_OPTIONS
    from .settings import SparseCanarySettings

    if rounds_of(args)[0] > 1:
        raise SpecError("--rounds is the embedding canary's; the sparse canary runs once (run it again for a window)")
    settings = SparseCanarySettings.from_values(collect(args, (*CANARY_FLEET_OPTIONS, *SPARSE_CANARY_OPTIONS)))
    settings.api_key()  # a missing key variable is a usage error, before anything loads
    return settings


def run_sparse_job(
    args: argparse.Namespace,
    spec: RunSpec,
    out: Path | None,
    *,
    settings: SparseCanarySettings | None = None,
    say: Callable[[str], None] = _quiet,
) -> CanaryRun:
    """Every sparse check against the one ``--endpoint``, then the diagnosis; ``say`` gets each line `evalsuite
    canary` prints as it goes. ``out``: checked writable before anything loads (None: nothing is written)."""
    from ...run import preflight
    from ...run.pipeline import prepare
    from ..rounds import CanaryRun
    from ..runner import run_sparse_canary
    from .context import make_sparse_context

    settings = settings or sparse_settings(args)
    preflight.run_paths(spec, out)
    prepared = prepare(spec)
    ctx = make_sparse_context(settings, prepared)
    say(
        f"sparse canary  {settings.endpoint} ({settings.api}) vs {prepared.model.name} @ "
        f"{prepared.contract.model_revision[:16]} on {prepared.dataset.identity.name}"
    )
    outcome = run_sparse_canary(ctx, on_verdict=lambda v: say(f"{v.status}  {v.message}"))
    return CanaryRun((settings,), ((outcome,),))
