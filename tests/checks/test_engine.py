"""The check engine (evalsuite/checks/): a declaration, its one error policy (judge), the runner, and what the
declaration carries for the canary's triage and diagnosis (no side table keyed by check name)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest

from evalsuite.base.errors import EndpointError, SpecError
from evalsuite.canary import diagnosis, triage
from evalsuite.canary.embedding import registry
from evalsuite.canary.reranker.registry import RERANK_CHECKS
from evalsuite.checks import Check, CheckOutcome, CheckOutcomes, judge, run_checks
from evalsuite.checks.declaration import find
from evalsuite.diagnose.hypotheses import STAGE_NAMES
from evalsuite.encode.http import Deadline


@dataclass(frozen=True)
class Settings:
    widgets: int = 0

    @classmethod
    def option_of(cls, name: str) -> str:
        return {"widgets": "canary_widget_count"}[name]


@dataclass
class Context:
    """The least a family's context is (evalsuite.checks.CheckContext)."""

    settings: Any = field(default_factory=Settings)
    deadline: Deadline = field(default_factory=lambda: Deadline.after(60.0, "the test's deadline"))
    closed: int = 0

    def deadline_passed(self) -> bool:
        return self.deadline.expired()

    def close(self) -> None:
        self.closed += 1


def _check(run: Any, name: str = "widgets", **kw: Any) -> Check[Context]:
    return Check(name=name, label=name.replace("_", " "), explanation="-", example=f"{name}: -", run=run, **kw)


def _passes(ctx: Context) -> CheckOutcome:
    return CheckOutcome("widgets", True, "widgets: fine")


def test_judge_runs_each_outcome_of_the_one_error_policy():
    ctx = Context()
    assert judge(_check(_passes), ctx).passed is True

    def endpoint(ctx: Context) -> CheckOutcome:
        raise EndpointError("GET http://h/v1/widgets: HTTP 500")

    v = judge(_check(endpoint), ctx)
    assert (v.passed, v.message, v.details) == (
        False,
        "widgets: GET http://h/v1/widgets: HTTP 500",
        {"error": "EndpointError"},
    )

    def bug(ctx: Context) -> CheckOutcome:
        raise KeyError("x")

    v = judge(_check(bug), ctx)
    assert v.passed is False and v.details == {"error": "KeyError", "internal": True}
    assert v.message.startswith("widgets: internal error in the check (KeyError: 'x')")

    def usage(ctx: Context) -> CheckOutcome:
        raise SpecError("bad --canary-widgets")

    with pytest.raises(SpecError, match="bad --canary-widgets"):  # a usage error is the user's: exit 2, no verdict
        judge(_check(usage), ctx)

    late = Context(deadline=Deadline.after(-1.0, "the test's deadline"))
    v = judge(_check(_passes), late)
    assert v.passed is False and v.details == {"error": "EndpointDeadlineExceeded"}
    assert v.message.startswith("widgets: not run: the test's deadline (-1s) ran out before this check started")


def test_a_check_its_settings_do_not_ask_for_is_skipped_naming_the_option():
    ctx = Context()
    calls: list[int] = []

    def counted(ctx: Context) -> CheckOutcome:
        calls.append(1)
        return _passes(ctx)

    v = judge(_check(counted, requires="widgets"), ctx)
    assert (v.passed, v.status, v.message) == (None, "SKIP", "widgets: no --canary-widget-count given") and not calls
    plain = Context(settings=type("Plain", (), {"widgets": 0})())  # settings without option names: the field's
    assert judge(_check(counted, requires="widgets"), plain).message == "widgets: no --widgets given"
    assert judge(_check(counted, requires="widgets"), Context(settings=Settings(widgets=3))).passed is True
    assert calls == [1]


def test_run_checks_runs_in_order_reports_each_verdict_and_closes_the_context():
    seen: list[str] = []
    checks = [_check(lambda c, n=n: CheckOutcome(n, n != "b", f"{n}: -"), name=n) for n in ("a", "b", "c")]
    ctx = Context()
    verdicts = run_checks(checks, ctx, lambda v: seen.append(v.check))
    assert [v.check for v in verdicts] == seen == ["a", "b", "c"] and ctx.closed == 1
    assert run_checks(checks, ctx, close=False) and ctx.closed == 1

    @dataclass(frozen=True)
    class Run(CheckOutcomes):
        verdicts: tuple[CheckOutcome, ...]

    run = Run(verdicts)
    assert (run.passed, run.failed, run.exit_status) == (False, ["b"], 1)
    assert Run((verdicts[0], CheckOutcome("s", None, "s: skipped"))).exit_status == 0

    def usage(ctx: Context) -> CheckOutcome:
        raise SpecError("bad")

    with pytest.raises(SpecError):
        run_checks([_check(usage)], ctx)
    assert ctx.closed == 2  # closed even when a usage error ends the run


def test_a_declaration_names_a_triage_stage_and_is_found_by_name():
    assert _check(_passes).stage == "agreement" and not _check(_passes).diagnosed
    with pytest.raises(SpecError, match="stage 'pooling' is not a triage stage; use one of identity, input, shape"):
        _check(_passes, stage="pooling")
    for stage in STAGE_NAMES:
        assert _check(_passes, stage=stage).stage == stage
    checks = (_check(_passes), _check(_passes, name="gadgets"))
    assert find("gadgets", checks, "test") is checks[1]
    with pytest.raises(SpecError, match="unknown test check 'nope'; known: widgets, gadgets"):
        find("nope", checks, "test")


def test_the_triage_chain_puts_each_verdict_on_its_declarations_stage(monkeypatch):
    """Bug caught: the stage read from anywhere but the declaration (a side table, a default for all)."""
    links = {link.stage: link for link in triage.checklist([CheckOutcome("bad_input", False, "bad input: -")], [])}
    assert registry.get_check("bad_input").stage == "truncation"
    assert links["truncation"].status == "FAIL" and links["truncation"].first_broken
    assert links["agreement"].status == "-"
    moved = dataclasses.replace(registry.get_check("bad_input"), stage="search")
    monkeypatch.setattr(
        registry, "CANARY_CHECKS", tuple(moved if c.name == "bad_input" else c for c in registry.CANARY_CHECKS)
    )
    links = {link.stage: link for link in triage.checklist([CheckOutcome("bad_input", False, "bad input: -")], [])}
    assert links["search"].status == "FAIL" and links["truncation"].status == "-"
    # a check of no canary family sits on "agreement"
    links = {link.stage: link for link in triage.checklist([CheckOutcome("elsewhere", True, "elsewhere: -")], [])}
    assert links["agreement"].evidence == ("elsewhere: PASS",)
    # the reranker family's verdicts on its own declarations (its bad_input shares the embedding check's name)
    verdicts = [CheckOutcome("bad_input", False, "bad input: -"), CheckOutcome("score_agreement", True, "s: -")]
    links = {link.stage: link for link in triage.checklist(verdicts, [], RERANK_CHECKS)}
    assert links["truncation"].evidence == ("bad_input: FAIL",) and links["agreement"].evidence == (
        "score_agreement: PASS",
    )


class Asked:
    """A context that records what the diagnosis asks it (the diagnosis itself needs a served model)."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def shared(self, key: str, make: Any) -> None:
        self.keys.append(key)
        return None


def test_the_diagnosis_reads_a_failure_only_of_a_check_declared_diagnosed(monkeypatch):
    diagnosed = {c.name for c in registry.CANARY_CHECKS if c.diagnosed}
    assert diagnosed == {
        "vector_agreement", "norm_agreement", "batch_invariance", "retrieval_agreement", "bad_input", "matryoshka",
        "length_ladder",
    }  # fmt: skip
    ctx = Asked()
    assert diagnosis.diagnosis_for(ctx, CheckOutcome("determinism", False, "determinism: -")) is None  # type: ignore[arg-type]
    assert diagnosis.diagnosis_for(ctx, CheckOutcome("vector_agreement", True, "vector agreement: -")) is None  # type: ignore[arg-type]
    assert ctx.keys == []
    diagnosis.diagnosis_for(ctx, CheckOutcome("vector_agreement", False, "vector agreement: -"))  # type: ignore[arg-type]
    assert ctx.keys == ["diagnosis:None"]
    now = dataclasses.replace(registry.get_check("determinism"), diagnosed=True)
    monkeypatch.setattr(
        registry, "CANARY_CHECKS", tuple(now if c.name == "determinism" else c for c in registry.CANARY_CHECKS)
    )
    diagnosis.diagnosis_for(ctx, CheckOutcome("determinism", False, "determinism: -"))  # type: ignore[arg-type]
    assert ctx.keys == ["diagnosis:None", "diagnosis:None"]


def test_each_verdict_says_how_long_its_check_ran_and_canary_json_carries_it():
    """Where a slow server's time went: ``judge`` times every check (skipped ones too), ``to_dict`` writes it."""
    import time

    def slow(ctx: Context) -> CheckOutcome:
        time.sleep(0.05)
        return _passes(ctx)

    v = judge(_check(slow), Context())
    assert v.seconds is not None and 0.05 <= v.seconds < 5.0
    assert v.to_dict()["seconds"] == v.seconds
    fast = judge(_check(_passes), Context())
    assert fast.seconds is not None and fast.seconds < 0.05
    skipped = judge(_check(slow, requires="widgets"), Context())
    assert skipped.passed is None and skipped.seconds is not None and skipped.seconds < 0.05
    assert "seconds" not in CheckOutcome("x", True, "x: -").to_dict()  # made outside judge: no figure
