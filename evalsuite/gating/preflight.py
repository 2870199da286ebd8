"""A gated session's checks before anything is encoded: every path it writes (:mod:`evalsuite.run.preflight`), and
its gates against the metrics and stages it computes and its baselines hold; each failure is one usage error."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import ContractError, SpecError
from ..run.preflight import cache_dir, check_writable_dir, check_writable_file

if TYPE_CHECKING:
    from .baseline import Baseline
    from .gates import Gate
    from .plan import SessionPlan


def uncomputed_gates(gates: Iterable[Gate], metrics: Sequence[str]) -> list[str]:
    """``"'GATE' needs METRIC"`` for each gate on a metric not in ``metrics``."""
    return [f"{g.expr!r} needs {g.metric}" for g in gates if g.metric not in metrics]


def session_plan(plan: SessionPlan) -> None:
    """Everything a gated pytest session will write, and its gates against its metrics and stages."""
    for dp in plan.datasets:
        missing = uncomputed_gates(dp.gates, dp.spec.metrics)
        if missing:
            raise SpecError(
                f"{dp.name}: gate {', '.join(missing)}, which is not computed; add it to --metrics "
                f"(computed: {','.join(dp.spec.metrics)}) or drop the gate"
            )
        staged = [repr(g.expr) for g in dp.gates if g.needs_reranker]
        if staged and plan.rerank is None:
            raise SpecError(
                f"{dp.name}: gate {', '.join(staged)} judges the reranked stage, but no reranker is given; "
                "pass --reranker DIR (a cross-encoder) or drop the gate"
            )
    for dp in plan.datasets:
        if plan.update_baseline and dp.baseline is not None:
            check_writable_file(
                dp.baseline, "--update-baseline: baseline", "choose a --baseline path in a directory you can write"
            )
        elif dp.baseline is not None and dp.baseline.is_dir():
            raise SpecError(
                f"baseline {dp.baseline}: is a directory; name the baseline JSON file "
                "(create it with --update-baseline)"
            )
        cache_dir(dp.spec)
    check_writable_dir(
        plan.reports_dir, "--reports-dir", "pass --reports-dir a directory you can write (it is created if missing)"
    )


def baseline_metrics(name: str, gates: Iterable[Gate], baseline: Path, metrics: Sequence[str]) -> None:
    """A gate that compares with a baseline needs the metric in the baseline file."""
    missing = uncomputed_gates((g for g in gates if g.needs_reference and not g.needs_reranker), metrics)
    if missing:
        raise SpecError(
            f"{name}: gate {', '.join(missing)}, which the baseline {baseline} does not hold "
            f"(it has {','.join(metrics)}); regenerate it with --update-baseline or drop the gate"
        )


def baseline_reranked(name: str, gates: Iterable[Gate], baseline: Baseline) -> None:
    """A gate comparing the reranked stage with a baseline needs that stage, and its metric, in the file."""
    staged = [g for g in gates if g.needs_reference and g.needs_reranker]
    if not staged:
        return
    if baseline.reranked is None:
        raise ContractError(
            f"{baseline.path}: the baseline holds no reranked stage (it was written without --reranker), which "
            f"gate {', '.join(repr(g.expr) for g in staged)} compares with; regenerate it with --update-baseline "
            "--reranker DIR"
        )
    held = tuple(baseline.reranked.metrics)
    missing = uncomputed_gates(staged, held)
    if missing:
        raise SpecError(
            f"{name}: gate {', '.join(missing)}, which the reranked stage of the baseline {baseline.path} does not "
            f"hold (it has {','.join(held)}); regenerate it with --update-baseline or drop the gate"
        )
