"""The canary check registry: one declaration per check, read by check_names, run_check and the reports."""

from __future__ import annotations

import dataclasses

import pytest

from evalsuite.base.errors import EndpointError, SpecError
from evalsuite.canary.embedding import registry
from evalsuite.canary.embedding.context import CanaryContext
from evalsuite.canary.embedding.registry import (
    CANARY_CHECKS,
    LABELS,
    check_names,
    checks_for_dataset,
    get_check,
    run_check,
)
from evalsuite.canary.embedding.settings import CanarySettings
from evalsuite.canary.report import checks_table, render_markdown
from evalsuite.canary.runner import CanaryOutcome
from evalsuite.checks import Check, CheckOutcome

from .conftest import CHECK_ORDER

ORDER = CHECK_ORDER
BASE = CanarySettings(endpoint="http://127.0.0.1:1/v1")


def test_every_check_is_declared_once_with_its_texts_and_settings():
    assert [c.name for c in CANARY_CHECKS] == ORDER  # the run order is the declaration order
    assert len({c.name for c in CANARY_CHECKS}) == len(CANARY_CHECKS) and len({c.label for c in CANARY_CHECKS}) == len(
        CANARY_CHECKS
    )
    assert {c.name: c.label for c in CANARY_CHECKS} == LABELS
    settings_fields = {f.name: f for f in dataclasses.fields(CanarySettings)}
    for c in CANARY_CHECKS:
        assert c.label and c.explanation and c.example, c.name
        assert c.example.startswith(c.label + ": "), c.example  # an example is a message the check gives
        assert callable(c.run)
        for t in c.thresholds:  # a threshold is a validated, numeric settings field
            assert t in settings_fields and settings_fields[t].metadata["low"] is not None, (c.name, t)
            assert isinstance(settings_fields[t].default, float)
        if c.requires is not None:
            assert CanarySettings.option_of(c.requires)  # a check that needs a setting names its option
    assert get_check("matryoshka").requires == "dimensions" and get_check("auth").requires == "api_key_env"
    assert [c.name for c in CANARY_CHECKS if c.per_dataset] == ["retrieval_agreement"]
    assert get_check("retrieval_agreement").thresholds == ("max_ndcg_delta", "min_overlap")
    with pytest.raises(SpecError, match="unknown canary check 'nope'; known: identity, vector_agreement"):
        get_check("nope")


@pytest.mark.parametrize(
    "changes", [{}, {"dimensions": (16,)}, {"api_key_env": "K"}, {"dimensions": (8, 4), "api_key_env": "K"}]
)
def test_check_names_follow_the_applies_rules(changes):
    s = dataclasses.replace(BASE, **changes)
    expected = (
        ORDER[:12]
        + (["matryoshka"] if changes.get("dimensions") else [])
        + (["auth"] if changes.get("api_key_env") else [])
    )
    assert check_names(s) == expected
    assert checks_for_dataset(s, first=True) == expected
    assert checks_for_dataset(s, first=False) == ["retrieval_agreement"]


def test_a_check_the_settings_do_not_ask_for_is_skipped_by_name(tiny_prepared):
    ctx = CanaryContext(BASE, tiny_prepared, reference_encoder=lambda: None, reference_result=lambda: None)
    for name, option in (("matryoshka", "--canary-dimensions"), ("auth", "--api-key-env")):
        v = run_check(name, ctx)
        assert (v.check, v.passed, v.status) == (name, None, "SKIP")
        assert v.message == f"{LABELS[name]}: no {option} given"
    assert len(ctx._cache) == 0  # nothing was computed or requested


def _extra_check(calls: list[str]) -> Check:
    def run(ctx: CanaryContext) -> CheckOutcome:
        calls.append(ctx.settings.endpoint)
        if ctx.settings.min_cosine > 0.999:
            raise EndpointError("GET http://127.0.0.1:1/v1/widgets: HTTP 500")
        return CheckOutcome("widgets", True, "widgets: fine", {"widgets": 3})

    return Check(
        name="widgets",
        label="widgets",
        run=run,
        explanation="counts widgets",
        example="widgets: too few",
        thresholds=("min_cosine",),
        requires="dimensions",
        per_dataset=True,
        report=lambda v: ["## Widgets", "", f"{v.details['widgets']} widgets", ""],
    )


def test_a_new_declaration_is_all_the_registry_readers_need(monkeypatch, tiny_prepared):
    calls: list[str] = []
    monkeypatch.setattr(registry, "CANARY_CHECKS", (*registry.CANARY_CHECKS, _extra_check(calls)))
    s = dataclasses.replace(BASE, dimensions=(16,))
    assert check_names(s)[-1] == "widgets" and "widgets" not in check_names(BASE)
    assert checks_for_dataset(s, first=False) == ["retrieval_agreement", "widgets"]
    ctx = CanaryContext(s, tiny_prepared, reference_encoder=lambda: None, reference_result=lambda: None)
    v = run_check("widgets", ctx)
    assert v.passed is True and calls == [s.endpoint]
    # an endpoint failure becomes a failed verdict under the check's label
    broken = run_check(
        "widgets",
        CanaryContext(
            dataclasses.replace(s, min_cosine=1.0),
            tiny_prepared,
            reference_encoder=lambda: None,
            reference_result=lambda: None,
        ),
    )
    assert (broken.passed, broken.details) == (False, {"error": "EndpointError"})
    assert broken.message == "widgets: GET http://127.0.0.1:1/v1/widgets: HTTP 500"
    md = render_markdown(_outcome(s, v))
    assert (
        "## Widgets\n\n3 widgets" in md
        and "| widgets | widgets | min_cosine | every dataset, with --canary-dimensions | counts widgets |" in md
    )


def _outcome(settings: CanarySettings, *verdicts: CheckOutcome) -> CanaryOutcome:
    contract = {"model": "tiny", "model_revision": "0" * 40, "pooling": "mean"}
    return CanaryOutcome(
        settings=settings, contract=contract, dataset={"name": "mini"}, served_model="tiny", verdicts=tuple(verdicts)
    )


def test_the_report_takes_each_checks_section_from_its_declaration():
    metrics = {
        "ndcg@10": {"reference": 0.5, "endpoint": 0.4, "delta": -0.1},
        "recall@10": {"reference": 0.7, "endpoint": 0.7, "delta": 0.0},
    }
    good = CheckOutcome(
        "retrieval_agreement",
        False,
        "retrieval agreement: |delta ndcg@10| 0.1000 > 0.005",
        {"metrics": metrics, "top10_overlap": {"mean": 0.25}},
    )
    md = render_markdown(_outcome(BASE, CheckOutcome("identity", True, "identity: ok"), good))
    assert md.startswith("# Canary: FAIL")
    assert "## Retrieval agreement\n\n| metric | reference | endpoint | delta |" in md
    assert "| ndcg@10 | 0.5000 | 0.4000 | -0.1000 |" in md and "Mean top-10 overlap: 0.250" in md
    errored = CheckOutcome(
        "retrieval_agreement", False, "retrieval agreement: HTTP 500", {"error": "EndpointHTTPError"}
    )
    assert "## Retrieval agreement" not in render_markdown(_outcome(BASE, errored))
    table = checks_table()
    for c in CANARY_CHECKS:
        assert f"| {c.name} | {c.label} |" in table
    assert "| matryoshka | matryoshka | min_cosine | once, with --canary-dimensions |" in table
    assert "| retrieval_agreement | retrieval agreement | max_ndcg_delta, min_overlap | every dataset |" in table
