"""The one verdict type: what a gate, a capacity gate, a reranker gain or a canary check answers.

``pass``, ``fail`` or ``inconclusive`` (the data cannot decide). The JSON value is the string itself;
:func:`label` is how terminals and Markdown show it. :func:`worst` folds many into one (fail over
inconclusive over pass) and :func:`exit_status` turns verdicts into a process exit status. Nothing
here imports anything: every layer may use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

Verdict = Literal["pass", "fail", "inconclusive"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "inconclusive")
SEVERITY: dict[Verdict, int] = {"pass": 0, "inconclusive": 1, "fail": 2}


def of(passed: bool | None) -> Verdict:
    """True -> pass, False -> fail, None (undecided) -> inconclusive."""
    return "inconclusive" if passed is None else ("pass" if passed else "fail")


def worst(verdicts: Iterable[Verdict]) -> Verdict | None:
    """The most severe of ``verdicts`` (fail > inconclusive > pass); None when there are none."""
    found = sorted(verdicts, key=SEVERITY.__getitem__)
    return found[-1] if found else None


def label(verdict: Verdict) -> str:
    """``PASS``, ``FAIL`` or ``INCONCLUSIVE``: how terminals and reports print a verdict."""
    return verdict.upper()


def exit_status(verdicts: Iterable[Verdict]) -> int:
    """1 when any verdict failed, else 0 (an inconclusive verdict does not fail a command by itself)."""
    return 1 if any(v == "fail" for v in verdicts) else 0
