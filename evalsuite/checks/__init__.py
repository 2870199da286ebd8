"""The check engine, owned by no family: what a check is (:class:`Check`, one declaration each), what it answers
(:class:`CheckOutcome`, and :class:`CheckOutcomes` for a run of them), the one error policy that runs it
(:func:`judge`) and the runner over a family's list (:func:`run_checks`).

The families are equal users of it, each with its own registry tuple in its own package:
the embedding canary (``canary/embedding/registry.py``), the reranker canary (``canary/reranker/registry.py``) and
the index audit (``audit/checks.py``); an installed package adds a check to one of them through the entry-point
group ``evalsuite.checks`` (:mod:`.plugins`). Shared pieces: :mod:`.measure` (cosines, summaries, HTTP status
classes) and :mod:`.detection` (how likely a random sample catches a share of bad answers).
Imports here stay light (no torch, faiss, ranx or transformers until a check runs).
"""

from __future__ import annotations

from .declaration import Check, CheckContext
from .judge import judge, run_checks
from .outcome import CheckOutcome, CheckOutcomes

__all__ = ["Check", "CheckContext", "CheckOutcome", "CheckOutcomes", "judge", "run_checks"]
