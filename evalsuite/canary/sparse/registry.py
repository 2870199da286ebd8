"""The sparse canary's checks (a served sparse endpoint against the local sparse reference), in run order.

Adding a check is one declaration and its test: a ``Check[SparseCanaryContext]`` in a module of
``canary/sparse/checks/`` (as an embedding check is declared, see ``canary/embedding/registry.py``), one entry in
:data:`SPARSE_CHECKS` where it should run, its threshold a ``SparseCanarySettings`` field (+ its Option in
``canary/sparse/options.py``), its test in ``tests/canary/test_sparse_canary.py`` (the loopback fault server).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...checks import Check, CheckOutcome, judge
from ...checks.declaration import find
from .checks.agreement import TOKEN_AGREEMENT, WEIGHT_AGREEMENT
from .checks.bad_input import SPARSE_BAD_INPUT
from .checks.retrieval import SPARSE_RETRIEVAL

if TYPE_CHECKING:
    from .context import SparseCanaryContext

SPARSE_CHECKS: tuple[Check[SparseCanaryContext], ...] = (
    TOKEN_AGREEMENT,
    WEIGHT_AGREEMENT,
    SPARSE_RETRIEVAL,
    SPARSE_BAD_INPUT,
)


def get_sparse_check(name: str) -> Check[SparseCanaryContext]:
    """The declaration of sparse check ``name``; SpecError listing the known ones otherwise."""
    return find(name, SPARSE_CHECKS, "sparse canary")


def run_sparse_check(name: str, ctx: SparseCanaryContext) -> CheckOutcome:
    """Run sparse check ``name`` (see :func:`evalsuite.checks.judge`)."""
    return judge(get_sparse_check(name), ctx)
