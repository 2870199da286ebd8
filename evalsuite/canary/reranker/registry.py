"""The reranker canary's checks (a served /rerank or /score against the local cross-encoder), in run order.

Adding a check is one declaration and its test: a ``Check[RerankCanaryContext]`` in a group module in
``canary/reranker/checks/`` (as an embedding check is declared, see ``canary/embedding/registry.py``), one entry in
:data:`RERANK_CHECKS` where it should run, its threshold a ``RerankCanarySettings`` field (+ its Option in
``canary/reranker/options.py``), its test in ``tests/rerank/test_canary_faults.py`` (the loopback fault server).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...checks import Check, CheckOutcome, judge
from ...checks.declaration import find
from .checks.agreement import (
    RERANK_INDEX_MAPPING,
    RERANK_RANKING_AGREEMENT,
    RERANK_RERANKED_METRICS,
    RERANK_SCORE_AGREEMENT,
)
from .checks.bad_input import RERANK_BAD_INPUT

if TYPE_CHECKING:
    from .context import RerankCanaryContext

RERANK_CHECKS: tuple[Check[RerankCanaryContext], ...] = (
    RERANK_INDEX_MAPPING,
    RERANK_SCORE_AGREEMENT,
    RERANK_RANKING_AGREEMENT,
    RERANK_BAD_INPUT,
    RERANK_RERANKED_METRICS,
)


def get_rerank_check(name: str) -> Check[RerankCanaryContext]:
    """The declaration of reranker check ``name``; SpecError listing the known ones otherwise."""
    return find(name, RERANK_CHECKS, "reranker canary")


def run_rerank_check(name: str, ctx: RerankCanaryContext) -> CheckOutcome:
    """Run reranker check ``name`` (see :func:`evalsuite.checks.judge`)."""
    return judge(get_rerank_check(name), ctx)
