"""What a canary check is: one :class:`CanaryCheck` declaration (a run function ``context -> CheckOutcome``
plus its label, explanation, example, thresholds and when it applies) and the :class:`CheckOutcome` it answers.

The checks themselves live with their family (``canary/embedding/checks/``, ``canary/reranker/checks/``) and
are listed in run order in :mod:`evalsuite.canary.registry`, which also says how to add one. Imports here stay
light (no torch, faiss, ranx or transformers until a check runs).
"""

from __future__ import annotations

from .base import CanaryCheck, CheckContext, CheckOutcome, CheckOutcomes

__all__ = ["CanaryCheck", "CheckContext", "CheckOutcome", "CheckOutcomes"]
