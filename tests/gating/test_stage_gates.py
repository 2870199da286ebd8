"""Gates on the reranked stage and the reranker's gain, without a model: the stage selector's grammar, which
sides a gate pairs, min_gain's verdicts on hand-made per-query scores, and the policy, plan and preflight
decisions made before anything is encoded. Each test names the one-line bug it catches."""

from pathlib import Path

import numpy as np
import pytest

from evalsuite.base.errors import ContractError, SpecError
from evalsuite.gating import preflight
from evalsuite.gating.baseline import Baseline
from evalsuite.gating.gates import Gate, Outcome, Scores
from evalsuite.gating.judge import evaluate_gate, explain
from evalsuite.gating.kinds import GATE_KINDS, kind_of, parse_gate
from evalsuite.gating.ledger import CandidateSeen, GateRecord, ReferenceSeen, RerankedSeen
from evalsuite.gating.plan import build_plan
from evalsuite.gating.policy import session_policy
from evalsuite.gating.report import stage_text, summary_rows
from evalsuite.gating.stages import RerankedStage, Stages, gate_sides
from evalsuite.gating.verdicts import GateRequest, judge_all
from evalsuite.rerank.contract import RerankerContract

# -- grammar ----------------------------------------------------------------------------------------


def test_a_stage_in_the_brackets_names_the_reranked_stage():
    """Bug caught: the stage part of the brackets is dropped (every gate judges the first stage)."""
    gate = parse_gate("ndcg@10[stage=reranked]>=0.4")
    assert (gate.kind, gate.stage, gate.selector, gate.threshold) == ("floor", "reranked", None, 0.4)
    assert gate.expr == "ndcg@10[stage=reranked]>=0.4" and gate.needs_reranker and not gate.needs_reference


@pytest.mark.parametrize(
    "written",
    [
        "ndcg@10[stage=reranked,topic=finance]:max_drop=0.02",
        "ndcg@10[ topic = finance , stage = reranked ]:max_drop=0.02",  # either order, spaces allowed
    ],
)
def test_a_stage_combines_with_a_slice(written):
    """Bug caught: the slice swallows the stage (or the reverse) when both are in the brackets."""
    gate = parse_gate(written)
    assert (gate.stage, gate.selector, gate.kind) == ("reranked", "topic=finance", "max_drop")
    assert gate.expr == "ndcg@10[stage=reranked,topic=finance]:max_drop=0.02"
    assert parse_gate(gate.expr) == gate  # the canonical form parses back to the same gate


def test_the_first_stage_is_the_default_and_is_not_written():
    """Bug caught: ``[stage=first]`` makes a different gate (and item name) than the plain expression."""
    assert parse_gate("ndcg@10[stage=first]>=0.3") == parse_gate("ndcg@10>=0.3")
    assert parse_gate("ndcg@10[stage=first,topic=x]:max_drop=0.01").expr == "ndcg@10[topic=x]:max_drop=0.01"


def test_a_slice_value_keeps_its_commas():
    """Bug caught: splitting the brackets on every comma breaks a slice value that has one."""
    gate = parse_gate("ndcg@10[topic=a,b,stage=reranked]>=0.1")
    assert (gate.selector, gate.stage) == ("topic=a,b", "reranked")


@pytest.mark.parametrize("kind", [k for k in GATE_KINDS if k.stage is None], ids=lambda k: k.name)
def test_every_kind_but_min_gain_takes_a_stage(kind):
    metric = kind.example.split(":")[0].split(">")[0]
    gate = parse_gate(kind.example.replace(metric, f"{metric}[stage=reranked]", 1))
    assert (gate.kind, gate.stage) == (kind.name, "reranked")


@pytest.mark.parametrize(
    "expr, needle",
    [
        ("ndcg@10[stage=second]>=0.4", "stage 'second' is not one of first, reranked"),
        ("ndcg@10[stage=reranked,stage=first]>=0.4", "name one stage"),
        ("ndcg@10[stage=reranked]:min_gain=0.01", "min_gain always judges the reranked stage against the first"),
        ("ndcg@10:min_gain", "min_gain needs a value"),
        ("ndcg@10[stage=reranked,topc~x]>=0.4", "is not a slice"),
    ],
)
def test_stage_errors(expr, needle):
    with pytest.raises(SpecError, match=needle) as info:
        parse_gate(expr)
    assert repr(expr) in str(info.value) or "slice" in str(info.value)


def test_min_gain_is_declared_once_and_judges_the_reranked_stage_without_a_reference():
    gate = parse_gate("ndcg@10:min_gain=0.01")
    kind = kind_of(gate)
    assert (gate.stage, gate.needs_reference, kind.paired, kind.against) == ("reranked", False, True, "first stage")
    assert parse_gate("ndcg@10:min_gain=-1%").threshold == pytest.approx(-0.01)  # "may lose at most 1%"


# -- which sides a gate pairs -------------------------------------------------------------------------


def _scores(label, value):
    return Scores(label, {"ndcg@10": value}, {"ndcg@10": {"q1": value, "q2": value}})


CAND = Stages(_scores("candidate first", 0.1), _scores("candidate reranked", 0.2))
REF = Stages(_scores("baseline", 0.3), _scores("baseline reranked", 0.4))


@pytest.mark.parametrize(
    "expr, cand, ref",
    [
        ("ndcg@10>=0.3", "candidate first", None),
        ("ndcg@10[stage=reranked]>=0.3", "candidate reranked", None),
        ("ndcg@10:max_drop=0.01", "candidate first", "baseline"),
        ("ndcg@10[stage=reranked]:max_drop=0.01", "candidate reranked", "baseline reranked"),
        ("ndcg@10[stage=reranked]:non_inferior=0.01", "candidate reranked", "baseline reranked"),
        ("ndcg@10:min_gain=0.01", "candidate reranked", "candidate first"),
    ],
)
def test_each_gate_pairs_its_stage(expr, cand, ref):
    """Bug caught: the wrong stage picked on either side (a reranked gate reading the first stage, a reranked
    drop compared with the baseline's first stage, the gain paired with the reference)."""
    gate = parse_gate(expr)
    c, r = gate_sides(gate, kind_of(gate).against, CAND, REF)
    assert (c.label, r.label if r else None) == (cand, ref)


def test_a_missing_reranked_stage_is_a_typed_error_on_either_side():
    gate = parse_gate("ndcg@10[stage=reranked]:max_drop=0.01")
    with pytest.raises(ContractError, match=r"baseline holds no reranked stage.*--update-baseline --reranker"):
        gate_sides(gate, "reference", CAND, Stages(REF.first))
    with pytest.raises(SpecError, match="no reranker ran; pass --reranker DIR"):
        gate_sides(gate, "reference", Stages(CAND.first), REF)


# -- min_gain on hand-made per-query scores -----------------------------------------------------------

N = 40
_FIRST = {f"q{i:02d}": 0.3 + 0.01 * i for i in range(N)}  # 0.30 .. 0.69


def _gain_sides(gains):
    reranked = {q: v + g for (q, v), g in zip(_FIRST.items(), gains, strict=True)}
    first = Scores("first stage", {"ndcg@10": float(np.mean(list(_FIRST.values())))}, {"ndcg@10": _FIRST})
    rer = Scores("reranked", {"ndcg@10": float(np.mean(list(reranked.values())))}, {"ndcg@10": reranked})
    return rer, first


def test_min_gain_passes_when_every_query_gains_more_than_required():
    """Every query gains exactly 0.05, so every bootstrap mean is 0.05: the lower bound is 0.05 by hand.
    Bug caught: the gain computed as first − reranked (it would be −0.05 and fail)."""
    outcome = evaluate_gate(parse_gate("ndcg@10:min_gain=0.04"), *_gain_sides([0.05] * N))
    assert outcome.verdict == "pass"
    assert outcome.reference == pytest.approx(0.495) and outcome.candidate == pytest.approx(0.545)
    assert outcome.delta == pytest.approx(0.05) and outcome.comparison.ci.lower_bound == pytest.approx(0.05)


def test_min_gain_fails_when_every_query_gains_less_than_required():
    """Gain 0.05 on every query, 0.06 required: the whole interval is 0.05 < 0.06.
    Bug caught: the fail test reading the lower bound's side the wrong way (``high > value``)."""
    outcome = evaluate_gate(parse_gate("ndcg@10:min_gain=0.06"), *_gain_sides([0.05] * N))
    assert outcome.verdict == "fail"
    message = explain(outcome, {}, "first stage", "reranked")
    assert "first stage 0.4950, reranked 0.5450" in message and "less than required" in message


def test_min_gain_is_inconclusive_when_the_interval_straddles_the_value():
    """Half the queries gain 0.45, half lose 0.35: mean gain 0.05, per-query sd 0.40, so the standard error is
    0.40 / sqrt(40) = 0.063 and the one-sided 95% lower bound is about 0.05 − 1.645 × 0.063 = −0.05, the two-sided
    upper bound about 0.05 + 1.96 × 0.063 = 0.17. Required 0.04: the point gain clears it, the interval does not.
    Bug caught: judging the point gain (it would pass)."""
    gains = [0.45, -0.35] * (N // 2)
    outcome = evaluate_gate(parse_gate("ndcg@10:min_gain=0.04"), *_gain_sides(gains))
    assert outcome.delta == pytest.approx(0.05)
    ci = outcome.comparison.ci
    assert ci.lower_bound == pytest.approx(0.05 - 1.645 * 0.40 / np.sqrt(N), abs=0.02)
    assert ci.high == pytest.approx(0.05 + 1.96 * 0.40 / np.sqrt(N), abs=0.02)
    assert outcome.verdict == "inconclusive"
    assert "neither the gain nor its absence is shown" in explain(outcome, {}, "first stage", "reranked")
    # far from the interval, the same data decide
    assert evaluate_gate(parse_gate("ndcg@10:min_gain=-0.2"), *_gain_sides(gains)).verdict == "pass"
    assert evaluate_gate(parse_gate("ndcg@10:min_gain=0.3"), *_gain_sides(gains)).verdict == "fail"


def test_min_gain_on_a_slice_judges_the_slice_queries_only():
    """Bug caught: the slice restriction skipped for min_gain (the other half of the queries would decide)."""
    from evalsuite.slicing import QueryProfile, SliceIndex

    topics = ["good" if i % 2 == 0 else "bad" for i in range(N)]
    index = SliceIndex(64, {q: QueryProfile(10, 10, {"topic": t}) for q, t in zip(_FIRST, topics, strict=True)}, ())
    rer, first = _gain_sides([0.1 if t == "good" else -0.1 for t in topics])
    rer = Scores(rer.label, rer.metrics, rer.per_query, index)
    assert evaluate_gate(parse_gate("ndcg@10:min_gain=0.05"), rer, first).verdict == "fail"  # the whole: mean 0
    assert evaluate_gate(parse_gate("ndcg@10[topic=good]:min_gain=0.05"), rer, first).verdict == "pass"
    assert evaluate_gate(parse_gate("ndcg@10[topic=bad]:min_gain=-0.05"), rer, first).verdict == "fail"


def test_min_gain_through_the_session_judgement_needs_no_reference():
    """Bug caught: min_gain treated as a relative gate that needs a baseline (its request would be an error)."""
    rer, first = _gain_sides([0.05] * N)
    gate = parse_gate("ndcg@10:min_gain=0.01")
    out = judge_all([GateRequest("d/g", gate, rer, first)], "holm")
    assert isinstance(out["d/g"], Outcome) and out["d/g"].verdict == "pass"
    err = judge_all([GateRequest("d/g", gate, rer, None)], "holm")["d/g"]
    assert isinstance(err, SpecError) and "pass --reranker DIR" in str(err)


# -- policy, plan and preflight (before anything is encoded) ------------------------------------------


def _plan(tmp_path: Path, file=None, rerank_flags=None, **session_flags):
    return build_plan(
        file_settings=file,
        file_path=tmp_path / "evalsuite.toml" if file else None,
        run_flags={"dataset": "data/small"},
        session_flags=session_flags,
        cwd=tmp_path,
        rerank_flags=rerank_flags,
    )


def test_a_reranked_gate_without_a_reranker_stops_before_encoding(tmp_path):
    """Bug caught: the check reads the wrong flag, and the session encodes before failing mid-run."""
    for expr in ("ndcg@10[stage=reranked]>=0.4", "ndcg@10:min_gain=0.01"):
        with pytest.raises(SpecError) as info:
            preflight.session_plan(_plan(tmp_path, gates=[expr]))
        assert f"gate {expr!r} judges the reranked stage" in str(info.value) and "--reranker DIR" in str(info.value)
        assert "\n" not in str(info.value)
    preflight.session_plan(_plan(tmp_path, gates=["ndcg@10:min_gain=0.01"], rerank_flags={"reranker": "ce"}))


def test_reranker_flags_override_the_spec_file_table(tmp_path):
    (tmp_path / "ce").mkdir()
    file = {"rerank": {"reranker": "ce", "depth": 20, "max_length": 64}, "dataset": "data/small"}
    plan = _plan(tmp_path, file=file, rerank_flags={"max_length": 128})
    assert plan.rerank is not None
    assert (plan.rerank.reranker, plan.rerank.depth, plan.rerank.max_length) == (str(tmp_path / "ce"), 20, 128)
    flags = _plan(tmp_path, file=file, rerank_flags={"depths": (50,)})
    assert flags.rerank is not None and flags.rerank.depth == 50
    assert _plan(tmp_path).rerank is None


def test_the_first_stage_retrieves_as_deep_as_the_reranker_reads(tmp_path):
    """Bug caught: a depth beyond the metrics' cutoffs reranks a shorter first-stage list than asked."""
    plan = _plan(tmp_path, rerank_flags={"reranker": "ce", "depths": (250,)})
    assert "recall@250" in plan.datasets[0].spec.metrics


@pytest.mark.parametrize(
    "flags, file, needle",
    [
        ({"reranker": "ce", "depths": (10, 50)}, None, "a gated session reranks at one depth"),
        ({"depths": (10,)}, None, "without a reranker; pass --reranker DIR"),
        ({}, {"rerank": "ce"}, "'rerank' must be a table"),
        ({}, {"rerank": {"reranker": "ce", "colour": "red"}}, "unknown reranker setting"),
    ],
)
def test_bad_reranker_settings(tmp_path, flags, file, needle):
    with pytest.raises(SpecError, match=needle):
        _plan(tmp_path, file={**file, "dataset": "data/small"} if file else None, rerank_flags=flags)


def test_sweep_cells_never_get_a_reranked_gate(tmp_path):
    """Bug caught: sweep cells (first stage only) judged by a reranked-stage gate on their first stage."""
    gates = ["ndcg@10>=0.1", "ndcg@10[stage=reranked]>=0.3"]
    plan = _plan(tmp_path, gates=gates, vary=["dim=16"], rerank_flags={"reranker": "ce"})
    policy = session_policy(plan, {}).dataset("small")
    assert [g.expr for g in policy.sweep_gates] == ["ndcg@10>=0.1"]
    assert [g.expr for g in policy.gates] == ["ndcg@10>=0.1", "ndcg@10[stage=reranked]>=0.3"]
    assert any("judge the reranked stage, not sweep cells" in n for n in policy.notes)


def _baseline(tmp_path, reranked):
    return Baseline(tmp_path / "b.json", None, "sha", {}, {"ndcg@10": 0.5}, {}, reranked)  # type: ignore[arg-type]


def test_an_old_baseline_without_the_reranked_stage_is_a_typed_error_naming_the_file(tmp_path):
    """Bug caught: an old baseline read as if its first stage were the reranked one (a silent wrong compare)."""
    gates = [parse_gate("ndcg@10[stage=reranked]:max_drop=0.01")]
    with pytest.raises(ContractError) as info:
        preflight.baseline_reranked("small", gates, _baseline(tmp_path, None))
    text = str(info.value)
    assert str(tmp_path / "b.json") in text and "no reranked stage" in text
    assert "regenerate it with --update-baseline --reranker DIR" in text
    # floors and the gain do not read the baseline: an old file is fine for them
    preflight.baseline_reranked("small", [parse_gate("ndcg@10:min_gain=0")], _baseline(tmp_path, None))
    stage = RerankedStage(10, {}, {"mrr@10": 0.5}, {"mrr@10": {}})
    with pytest.raises(SpecError, match=r"reranked stage of the baseline .* does not hold"):
        preflight.baseline_reranked("small", gates, _baseline(tmp_path, stage))


def test_the_reranked_stage_round_trips_and_a_changed_reranker_is_named():
    contract = RerankerContract("ce", "a" * 64, "b" * 64, "sigmoid", "pair", 128)
    stage = RerankedStage(20, contract.to_dict(), {"ndcg@10": 0.1234567}, {"ndcg@10": {"q1": 0.1234567}})
    back = RerankedStage.from_dict(stage.to_dict())
    assert back.metrics == {"ndcg@10": 0.123457} and back.per_query == {"ndcg@10": {"q1": 0.123457}}
    assert back.problems(contract, 20) == []
    assert back.problems(contract.replace(max_length=64), 10) == [
        "reranker max_length: baseline 128, candidate 64",
        "rerank depth: baseline 20, candidate 10",
    ]


# -- the report ---------------------------------------------------------------------------------------


def _record(expr, verdict, value, ref, comparison=None):
    from evalsuite.gating.gates import Evidence

    gate = parse_gate(expr)
    return GateRecord("d", f"gate[{expr}]", Outcome(gate, verdict, value, ref, None, evidence=Evidence(comparison)))


def test_summary_rows_keep_the_stages_apart():
    """Bug caught: a failing reranked-stage gate marking the first stage's row (or the gain's CI shown as the
    delta against the baseline)."""
    from evalsuite.scoring.stats import compare

    gain = compare(np.array([[0.6], [0.7]]), np.array([[0.5], [0.5]]))[0]
    records = [
        _record("ndcg@10:max_drop=0.01", "pass", 0.5, 0.5),
        _record("ndcg@10[stage=reranked]>=0.9", "fail", 0.6, None),
        _record("ndcg@10:min_gain=0.01", "pass", 0.6, 0.5, gain),
    ]
    first = summary_rows(
        CandidateSeen("d", {"ndcg@10": 0.5}), ReferenceSeen("d", "baseline", "b", {"ndcg@10": 0.5}), records
    )
    assert [(r.metric, r.verdict) for r in first] == [("ndcg@10", "pass")]
    reranked = summary_rows(
        RerankedSeen("d", "candidate", {"ndcg@10": 0.6}),
        RerankedSeen("d", "reference", {"ndcg@10": 0.62}),
        records,
        "reranked",
    )
    assert [(r.metric, r.verdict, r.comparison) for r in reranked] == [("ndcg@10[stage=reranked]", "fail", None)]
    assert reranked[0].delta == pytest.approx(-0.02)
    assert [stage_text(r.outcome.gate) for r in records] == ["first", "reranked", "reranked − first"]


def test_outcome_names_its_stage():
    out = Outcome(Gate("ndcg@10", "floor", 0.4, "ndcg@10[stage=reranked]>=0.4", False, None, "reranked"), "fail", 0.3)
    assert out.to_dict()["stage"] == "reranked"
    assert explain(out, {}).startswith("ndcg@10 (reranked stage) = 0.3000 is below the floor 0.4")


def test_reranker_options_do_not_set_the_embedding_model():
    """Bug caught: --reranker-max-length sharing its destination with --max-length (both name max_length)."""
    import argparse

    from evalsuite.gating.start import PREFIX, plugin_options, rerank_flags
    from evalsuite.run.options import RUN_OPTIONS, add_options, collect

    parser = argparse.ArgumentParser()
    for options, prefix in plugin_options():
        add_options(parser.add_argument, options, prefix)
    values = parser.parse_args(["--reranker-max-length", "64", "--reranker-dtype", "float16", "--max-length", "128"])
    assert collect(values, RUN_OPTIONS, PREFIX) == {"max_length": 128}
    assert rerank_flags(values) == {"max_length": 64, "dtype": "float16"}
