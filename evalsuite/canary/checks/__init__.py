"""The canary checks: served vectors and retrieval against the local reference of the same revision.

Each check is one :class:`CanaryCheck` declaration (a run function ``CanaryContext -> Verdict``
plus its label, explanation, example, thresholds and when it applies), listed in order in
:mod:`.registry`. The pytest plugin makes one item per name in :func:`check_names` and the CLI
prints the same verdicts: both call :func:`run_check`. Imports here stay light (no torch, faiss,
ranx or transformers until a check runs).
"""

from __future__ import annotations

from ..context import CanaryContext
from ..settings import CanarySettings
from .base import CanaryCheck, Verdict
from .registry import (
    CHECKS,
    LABELS,
    RERANK_CHECKS,
    check_names,
    checks_for_dataset,
    get_check,
    get_rerank_check,
    judge,
    run_check,
    run_rerank_check,
)

__all__ = [
    "CHECKS",
    "LABELS",
    "RERANK_CHECKS",
    "CanaryCheck",
    "CanaryContext",
    "CanarySettings",
    "Verdict",
    "check_names",
    "checks_for_dataset",
    "get_check",
    "get_rerank_check",
    "judge",
    "run_check",
    "run_rerank_check",
]
