"""Run the reranker canary: first stage and reference locally, the checks in order, one outcome; and its reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import EvalsuiteError
from ...io import atomic_write_json, atomic_write_text
from ...reports.markdown import contract_rows, table
from .checks import CHECKS, RerankVerdict

if TYPE_CHECKING:
    from ...result import Result
    from ...spec import RunSpec
    from ..run import RerankSpec
    from .context import RerankCanaryContext
    from .settings import RerankCanarySettings


@dataclass(frozen=True)
class RerankCanaryOutcome:
    settings: RerankCanarySettings
    contract: dict[str, Any]
    verdicts: tuple[RerankVerdict, ...]
    request_fields: dict[str, int | bool]  # what every request carried beyond the API's own fields

    @property
    def passed(self) -> bool:
        return all(v.passed is not False for v in self.verdicts)

    @property
    def failed(self) -> list[str]:
        return [v.check for v in self.verdicts if v.passed is False]

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "settings": self.settings.to_dict(),
            "reranker_contract": self.contract,
            "request_fields": self.request_fields,
            "verdicts": [v.to_dict() for v in self.verdicts],
        }


def make_context(
    settings: RerankCanarySettings, spec: RunSpec, rspec: RerankSpec, first: Result | None = None
) -> RerankCanaryContext:
    from ...encode.endpoint import Deadline
    from ..run import make_reranker, resolve_reranker, run_first_stage
    from .client import RerankClient
    from .context import RerankCanaryContext

    info, contract = resolve_reranker(rspec)
    config = settings.endpoint_config()  # a missing key variable is a usage error, before any work
    if first is None:
        _, first = run_first_stage(spec, [settings.depth])
    client = RerankClient(
        config,
        settings.api,
        raw_scores=settings.raw_scores,
        truncate_prompt_tokens=contract.max_length,
        deadline=Deadline.after(settings.deadline, "the reranker canary's deadline"),
    )
    return RerankCanaryContext(settings, client, make_reranker(info, contract, spec, rspec), contract, first)


def run_checks(
    ctx: RerankCanaryContext, on_verdict: Callable[[RerankVerdict], None] | None = None
) -> RerankCanaryOutcome:
    verdicts = []
    try:
        for check in CHECKS:
            try:
                v = check.run(ctx)
            except EvalsuiteError as exc:  # e.g. the deadline ran out: this check fails, the next ones still run
                v = RerankVerdict(check.name, False, f"{check.label}: {exc}")
            verdicts.append(v)
            if on_verdict is not None:
                on_verdict(v)
    finally:
        ctx.close()
    return RerankCanaryOutcome(ctx.settings, ctx.contract.to_dict(), tuple(verdicts), dict(ctx.client.request_fields))


def render_markdown(outcome: RerankCanaryOutcome) -> str:
    lines = [
        f"# Reranker canary: {'PASS' if outcome.passed else 'FAIL'}",
        "",
        f"Endpoint `{outcome.settings.endpoint}` ({outcome.settings.api} API) against the local reference "
        f"`{outcome.contract['model']}` @ `{outcome.contract['model_revision'][:16]}`.",
        "",
        *(
            [
                f"Every request carried {', '.join(f'`{k}: {json.dumps(v)}`' for k, v in outcome.request_fields.items())}.",
                "",
            ]
            if outcome.request_fields
            else []
        ),
        table(["check", "verdict", "message"], [(v.check, v.status, v.message) for v in outcome.verdicts]),
        "## Reranker contract",
        "",
        table(["field", "value"], contract_rows(outcome.contract)),
        "## The checks",
        "",
        table(["check", "what it compares"], [(c.name, c.explanation) for c in CHECKS]),
    ]
    return "\n".join(lines)


def write_reports(outcome: RerankCanaryOutcome, out: str | Path) -> dict[str, Path]:
    out = Path(out)
    return {
        "json": atomic_write_json(out / "rerank_canary.json", outcome.to_dict()),
        "markdown": atomic_write_text(out / "report.md", render_markdown(outcome)),
    }
