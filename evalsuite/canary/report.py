"""`canary.json` and `report.md` of either family, written atomically and redacted. Settings carry the key's
variable name only.

Per-check text comes from the check declarations (:mod:`evalsuite.canary.checks.registry`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..io import atomic_write_json, atomic_write_text
from ..reports.markdown import contract_rows, table
from .checks import registry
from .checks.base import CanaryCheck, redacted
from .rerank_settings import RerankCanarySettings
from .runner import CanaryOutcome


def checks_table(checks: Sequence[CanaryCheck[Any]] = registry.CHECKS) -> str:
    """Every check of a family (the embedding canary's by default): name, label, threshold settings, when it
    runs, what it compares (for report.md and docs)."""
    from .settings import CanarySettings

    def when(requires: str | None, per_dataset: bool) -> str:
        scope = "every dataset" if per_dataset else "once"
        return scope if requires is None else f"{scope}, with --{CanarySettings.option_of(requires).replace('_', '-')}"

    return table(
        ["check", "label", "thresholds", "runs", "what it compares"],
        [
            (c.name, c.label, ", ".join(c.thresholds) or "-", when(c.requires, c.per_dataset), c.explanation)
            for c in checks
        ],
    )


def render_markdown(outcome: CanaryOutcome) -> str:
    s = outcome.settings
    reranker = outcome.family == "reranker"
    served = f"({s.api} API)" if isinstance(s, RerankCanarySettings) else f"served model `{outcome.served_model}`,"
    lines = [
        f"# {'Reranker canary' if reranker else 'Canary'}: {'PASS' if outcome.passed else 'FAIL'}",
        "",
        (
            f"Endpoint `{s.endpoint}` {served} against the local reference "
            f"`{outcome.contract['model']}` @ `{outcome.contract['model_revision'][:16]}` "
            f"on `{outcome.dataset['name']}`."
        ),
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
    ]
    if not outcome.passed:
        from .triage import markdown

        lines += markdown(outcome.triage(), outcome.diagnoses)
    find = registry.get_rerank_check if reranker else registry.get_check
    for v in outcome.verdicts:
        check = find(v.check)
        if check.report is not None:
            lines += check.report(v)
    lines += [
        "## Settings",
        "",
        table(["setting", "value"], [(k, str(val)) for k, val in s.to_dict().items()]),
        "## Reranker contract" if reranker else "## Contract",
        "",
        table(["field", "value"], contract_rows(outcome.contract)),
        "## The checks",
        "",
        checks_table(registry.RERANK_CHECKS if reranker else registry.CHECKS),
    ]
    return "\n".join(lines)


def write_canary_reports(outcome: CanaryOutcome, out: str | Path) -> dict[str, Path]:
    """canary.json and report.md, every API key redacted from both (verdicts are already; this is the backstop)."""
    out = Path(out)
    return {
        "json": atomic_write_json(out / "canary.json", redacted(outcome.to_dict())),
        "markdown": atomic_write_text(out / "report.md", redacted(render_markdown(outcome))),
    }
