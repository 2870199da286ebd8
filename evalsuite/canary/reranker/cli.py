"""`evalsuite rerank-canary --reranker-endpoint URL --reranker DIR [run options] [--out DIR]`: the reranker
canary alone, the same as `evalsuite canary --reranker-endpoint URL` (both read :class:`RerankCanaryRequest`).

Exit 0 when every check passes, 1 when one fails, 2 on a usage or input error.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...base.jobs import Job
from ...rerank.options import RERANK_OPTIONS
from ...run.options import OUT_OPTION, RUN_OPTIONS, collect
from .options import READ_OPTIONS
from .settings import NEEDS_RERANKER, RerankCanarySettings

if TYPE_CHECKING:
    from ...rerank.run import RerankSpec
    from ...run.spec import RunSpec


OPTIONS = (*RUN_OPTIONS, *RERANK_OPTIONS, *READ_OPTIONS, OUT_OPTION.with_default("reports/rerank-canary/<host-port>"))


def cmd_rerank_canary(args: argparse.Namespace) -> int:
    request = RerankCanaryRequest.from_args(args)
    if request is None:
        from ...base.errors import SpecError

        raise SpecError("rerank-canary needs --reranker-endpoint URL (the served reranker's base URL)")
    return request.run(Path(args.out) if args.out else None)


def reranker_spec(values: Any) -> RerankSpec:
    """The ``--reranker*`` flags as a RerankSpec; a usage error (SpecError) without ``--reranker DIR``."""
    from ...base.errors import SpecError
    from ...rerank.options import rerank_settings
    from ...rerank.run import RerankSpec

    rspec = RerankSpec.from_mapping(rerank_settings(values), source="command line")
    if not rspec.reranker:
        raise SpecError(NEEDS_RERANKER)
    return rspec


@dataclass(frozen=True)
class RerankCanaryRequest:
    """A reranker canary the command line asks for, its settings checked (nothing loaded yet)."""

    settings: RerankCanarySettings
    spec: RunSpec
    rspec: RerankSpec

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RerankCanaryRequest | None:
        """None without ``--reranker-endpoint``; a usage error (SpecError) for a bad setting, a missing
        ``--reranker`` or an API key variable that is not set."""
        from ...run.spec import RunSpec

        settings = RerankCanarySettings.from_values(collect(args, READ_OPTIONS))
        if settings is None:
            return None
        settings.api_key()
        rspec = reranker_spec(args)
        return cls(settings, RunSpec.from_mapping(collect(args), source="command line"), rspec)

    def default_out(self) -> Path:
        host = re.sub(r"^https?://", "", self.settings.endpoint).split("/", 1)[0]
        return Path("reports") / "rerank-canary" / re.sub(r"[^A-Za-z0-9._-]+", "-", host)

    def run(self, out: Path | None = None) -> int:
        """Run every check, print each verdict as it comes, write the reports; 0 when all pass, 1 when one fails."""
        from ...run import preflight
        from ..output import finish, say
        from ..runner import run_rerank_canary
        from .context import make_rerank_context

        out = out or self.default_out()
        preflight.run_paths(self.spec, out)  # before loading anything
        ctx = make_rerank_context(self.settings, self.spec, self.rspec)
        say(
            f"rerank canary  {self.settings.endpoint} ({self.settings.api}) vs {ctx.contract.model} @ "
            f"{ctx.contract.model_revision[:16]}"
        )
        return finish(run_rerank_canary(ctx, on_verdict=lambda v: say(f"{v.status}  {v.message}")), out)


JOB = Job(
    "rerank-canary",
    help="check a served /rerank or /score endpoint against the local reference reranker "
    "(the same as `evalsuite canary --reranker-endpoint URL`)",
    options=lambda: OPTIONS,
    run=cmd_rerank_canary,
    exit_codes={0: "every check passed", 1: "a check failed"},
)
