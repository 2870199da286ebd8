"""The canary checks, in the order they run: the one list the CLI, the plugin and the reports read.

Adding a check::

    # 1. a declaration in a check module of its family (canary/embedding/checks/: a new one, or the group it belongs to):
    def check_widgets(ctx: CanaryContext) -> CheckOutcome: ...      # CheckOutcome("widgets", ...), message "widgets: ..."
    WIDGETS = CanaryCheck(name="widgets", label="widgets", run=check_widgets,
                          explanation="what it compares and why", example="widgets: a failure message",
                          thresholds=("widget_min",))           # requires=..., per_dataset=..., report=...
    # 2. one entry in CANARY_CHECKS below, where it should run;
    # 3. its threshold as a CanarySettings field (bounds validated from the declaration):
    #        widget_min: float = _setting(0.9, "canary_widget_min", low=0.0, high=1.0)
    #    and, if users may set it, the Option "--canary-widget-min" in canary/embedding/options.py
    #    (tests/canary/test_settings.py fails while the two disagree);
    # 4. its test (tests/canary/): a faithful server passes it, the fault it names fails it.

A reranker check is the same: a ``CanaryCheck[RerankCanaryContext]`` in a group module in ``canary/reranker/checks/``, one
entry in ``RERANK_CHECKS``, its threshold a ``RerankCanarySettings`` field (+ its Option in
``canary/reranker/options.py``), its test in ``tests/rerank/test_canary_faults.py`` (the loopback fault server).

Labels, the list of checks a session runs, skip verdicts and the report sections follow from here;
:func:`judge` runs a check of either family under the one error policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.errors import EndpointError, EvalsuiteError, SpecError
from ..encode.secret import cut
from .checks.base import C, CanaryCheck, CheckOutcome
from .embedding.checks.agreement import BATCH_INVARIANCE, NORM_AGREEMENT, VECTOR_AGREEMENT
from .embedding.checks.bad_input import BAD_INPUT
from .embedding.checks.determinism import DETERMINISM
from .embedding.checks.identity import AUTH, IDENTITY
from .embedding.checks.invariance import CASE_VARIANTS, DISTINCT_INPUTS
from .embedding.checks.ladder import LENGTH_LADDER
from .embedding.checks.matryoshka import MATRYOSHKA
from .embedding.checks.repeat import REPEATED_REQUESTS
from .embedding.checks.retrieval import RETRIEVAL_AGREEMENT
from .embedding.checks.stress import STRESS_INPUTS
from .reranker.checks.agreement import (
    RERANK_INDEX_MAPPING,
    RERANK_RANKING_AGREEMENT,
    RERANK_RERANKED_METRICS,
    RERANK_SCORE_AGREEMENT,
)
from .reranker.checks.bad_input import RERANK_BAD_INPUT

if TYPE_CHECKING:
    from .embedding.context import CanaryContext
    from .embedding.settings import CanarySettings
    from .reranker.context import RerankCanaryContext

CANARY_CHECKS: tuple[CanaryCheck[CanaryContext], ...] = (
    IDENTITY,
    VECTOR_AGREEMENT,
    NORM_AGREEMENT,
    BATCH_INVARIANCE,
    REPEATED_REQUESTS,
    RETRIEVAL_AGREEMENT,
    BAD_INPUT,
    # issue 40's probes: what a fixed probe set misses
    LENGTH_LADDER,
    CASE_VARIANTS,
    DISTINCT_INPUTS,
    DETERMINISM,
    STRESS_INPUTS,
    MATRYOSHKA,
    AUTH,
)
# the reranker canary's checks (a served /rerank or /score against the local cross-encoder), in run order
RERANK_CHECKS: tuple[CanaryCheck[RerankCanaryContext], ...] = (
    RERANK_INDEX_MAPPING,
    RERANK_SCORE_AGREEMENT,
    RERANK_RANKING_AGREEMENT,
    RERANK_BAD_INPUT,
    RERANK_RERANKED_METRICS,
)
LABELS: dict[str, str] = {c.name: c.label for c in CANARY_CHECKS}


def _find(name: str, checks: tuple[CanaryCheck[C], ...], what: str) -> CanaryCheck[C]:
    for check in checks:
        if check.name == name:
            return check
    raise SpecError(f"unknown {what} check {name!r}; known: {', '.join(c.name for c in checks)}")


def get_check(name: str) -> CanaryCheck[CanaryContext]:
    """The declaration of check ``name``; SpecError listing the known ones otherwise."""
    return _find(name, CANARY_CHECKS, "canary")


def get_rerank_check(name: str) -> CanaryCheck[RerankCanaryContext]:
    """The declaration of reranker check ``name``; SpecError listing the known ones otherwise."""
    return _find(name, RERANK_CHECKS, "reranker canary")


def check_names(settings: CanarySettings) -> list[str]:
    """The checks that apply to these settings, in the order they run."""
    return [c.name for c in CANARY_CHECKS if c.applies(settings)]


def checks_for_dataset(settings: CanarySettings, *, first: bool) -> list[str]:
    """The checks a session runs for one dataset: all of them for the first dataset, only the
    dataset-dependent ones (``per_dataset``, e.g. retrieval agreement) for the others."""
    return [c.name for c in CANARY_CHECKS if c.applies(settings) and (first or c.per_dataset)]


def run_check(name: str, ctx: CanaryContext) -> CheckOutcome:
    """Run embedding check ``name`` (see :func:`judge`)."""
    return judge(get_check(name), ctx)


def run_rerank_check(name: str, ctx: RerankCanaryContext) -> CheckOutcome:
    """Run reranker check ``name`` (see :func:`judge`)."""
    return judge(get_rerank_check(name), ctx)


def judge(check: CanaryCheck[C], ctx: C) -> CheckOutcome:
    """Run one check of either family under the one error policy. A check the settings do not ask for is
    skipped (``passed`` None); an endpoint that breaks the contract gives a failed verdict naming what broke, and so does a check that starts
    after the canary's overall deadline; a usage or input error (SpecError, ContractError, ...) propagates.

    Any other exception is a bug in the check, not in the server: it still ends as a failed verdict
    (so the canary always reports), named as an internal error with its type."""
    name = check.name
    if not check.applies(ctx.settings):
        return check.skipped()
    if ctx.deadline_passed():
        return CheckOutcome(
            name,
            False,
            f"{check.label}: not run: {ctx.deadline.describe()} ran out before this check "
            "started; raise it if the server is just slow",
            {"error": "EndpointDeadlineExceeded"},
        )
    try:
        return check.run(ctx)
    except EndpointError as exc:
        return CheckOutcome(name, False, f"{check.label}: {exc}", {"error": type(exc).__name__})
    except EvalsuiteError:  # usage and input errors (SpecError, ContractError, ModelError, ...): exit 2
        raise
    except Exception as exc:  # the canary must end with a verdict for every check
        return CheckOutcome(
            name,
            False,
            f"{check.label}: internal error in the check ({type(exc).__name__}: "
            f"{cut(str(exc), 300)}); please report it with canary.json",
            {"error": type(exc).__name__, "internal": True},
        )
