"""The one error policy a check of any family runs under (:func:`judge`) and the runner over a family's checks
(:func:`run_checks`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from ..base.errors import EndpointError, EvalsuiteError
from .declaration import C, Check
from .outcome import CheckOutcome


def judge(check: Check[C], ctx: C) -> CheckOutcome:
    """Run one check of any family under the one error policy (:func:`_judge`), timed: the outcome's ``seconds``
    (a skipped check's too, about nothing)."""
    t0 = time.perf_counter()
    outcome = _judge(check, ctx)
    # set on the outcome as made (frozen, as __post_init__ sets its fields): dataclasses.replace would redact its
    # message and every string of its details a second time
    object.__setattr__(outcome, "seconds", round(time.perf_counter() - t0, 4))
    return outcome


def _judge(check: Check[C], ctx: C) -> CheckOutcome:
    """Run one check of any family under the one error policy. A check the settings do not ask for is
    skipped (``passed`` None); an endpoint that breaks the contract gives a failed verdict naming what broke, and so does a check that starts
    after the run's overall deadline; a usage or input error (SpecError, ContractError, ...) propagates.

    Any other exception is a bug in the check, not in the server: it still ends as a failed verdict
    (so the canary always reports), named as an internal error with its type."""
    from ..encode.secret import cut

    name = check.name
    if not check.applies(ctx.settings):
        return check.skipped(ctx.settings)
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


def run_checks(
    checks: Iterable[Check[C]],
    ctx: C,
    on_verdict: Callable[[CheckOutcome], None] | None = None,
    *,
    close: bool = True,
) -> tuple[CheckOutcome, ...]:
    """Every check in order under the one error policy (:func:`judge`); the context is closed
    unless ``close`` is False (the caller still needs it, e.g. to diagnose a failure, and closes it)."""
    verdicts: list[CheckOutcome] = []
    try:
        for check in checks:
            verdict = judge(check, ctx)
            verdicts.append(verdict)
            if on_verdict is not None:
                on_verdict(verdict)
    finally:
        if close:
            ctx.close()
    return tuple(verdicts)
