"""The Python front door: ``evalsuite.evaluate``, ``evalsuite.sweep``, ``evalsuite.canary`` and ``evalsuite.audit``
run the same jobs as `evalsuite run`, `sweep`, `canary` and `audit` (their options as keywords) and return the
objects those commands write (``to_json()`` is the command's JSON file, ``write(out)`` its files). docs/api.md.

Cheap to import: each function imports the model stack, FAISS and ranx when it runs, never before.
"""

from __future__ import annotations

from .compare import MetricDelta, RunComparison
from .front import audit, budget, canary, evaluate, sweep
from .results import AuditResult, CanaryReport, Evaluation, SweepReport

__all__ = [
    "AuditResult",
    "CanaryReport",
    "Evaluation",
    "MetricDelta",
    "RunComparison",
    "SweepReport",
    "audit",
    "budget",
    "canary",
    "evaluate",
    "sweep",
]
