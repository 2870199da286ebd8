"""Gates on a slice: parsed for every kind, judged on the slice's queries with the slice's CI, never a silent
pass on too few queries, and an unknown field or value refused before anything is encoded."""

import math

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.gating.gates import Scores
from evalsuite.gating.judge import evaluate_gate, explain
from evalsuite.gating.kinds import GATE_KINDS, parse_gate
from evalsuite.gating.slices import check_gate_slices
from evalsuite.gating.verdicts import GateRequest, judge_all
from evalsuite.slicing import QueryProfile, SliceIndex

TOPICS = {"finance": 12, "sports": 12, "music": 12, "cooking": 12, "rare": 5}


def _index():
    topics = [t for t, n in TOPICS.items() for _ in range(n)]
    return SliceIndex(
        64, {f"q{i:02d}": QueryProfile(10 + i, 100 + i, {"topic": t}) for i, t in enumerate(topics)}, ("topic",)
    )


def _sides(change, seed=0):
    """Reference per-query ndcg@10 drawn once; the candidate is ``change(qid, topic, value)``."""
    index = _index()
    rng = np.random.default_rng(seed)
    ref = {q: float(rng.uniform(0.3, 0.9)) for q in index.profiles}
    cand = {q: change(q, index.profiles[q].fields["topic"], v) for q, v in ref.items()}

    def scores(label, pq, slices=None):
        return Scores(label, {"ndcg@10": float(np.mean(list(pq.values())))}, {"ndcg@10": pq}, slices)

    return scores("candidate", cand, index), scores("baseline", ref), cand, ref


def _mean(pq, topic):
    return float(np.mean([v for q, v in pq.items() if _index().profiles[q].fields["topic"] == topic]))


@pytest.mark.parametrize("kind", GATE_KINDS, ids=lambda k: k.name)
def test_every_kind_takes_a_slice(kind):
    metric = kind.example.split(":")[0].split(">")[0]
    sliced = kind.example.replace(metric, f"{metric} [ topic = finance ]", 1)
    gate = parse_gate(sliced)
    assert gate.kind == kind.name and gate.selector == "topic=finance"
    assert gate.expr == kind.example.replace(metric, f"{metric}[topic=finance]", 1)


def test_a_topic_gate_fails_while_the_average_passes():
    cand, ref, c, r = _sides(lambda q, t, v: v - 0.1 - 0.01 * (int(q[1:]) % 3) if t == "finance" else v)
    overall = evaluate_gate(parse_gate("ndcg@10:max_drop=0.03"), cand, ref)
    assert overall.verdict == "pass" and -0.03 < overall.delta < 0
    sliced = evaluate_gate(parse_gate("ndcg@10[topic=finance]:max_drop=0.02"), cand, ref)
    assert sliced.verdict == "fail"  # bug caught: the slice ignored (judged on every query)
    assert sliced.candidate == pytest.approx(_mean(c, "finance")) and sliced.reference == pytest.approx(
        _mean(r, "finance")
    )
    assert sliced.n_queries == 12 and sliced.comparison.ci.n_queries == 12
    assert sliced.comparison.ci.upper_bound < -0.02
    assert {q for q, _, _ in sliced.losers} <= {q for q in c if _index().profiles[q].fields["topic"] == "finance"}
    text = explain(sliced, {})
    assert "ndcg@10 on [topic=finance]" in text and "slice [topic=finance] has 12 queries" in text
    assert "against the allowed drop -0.02: fails" in text and "queries that lost most:" in text
    assert evaluate_gate(parse_gate("ndcg@10[topic=sports]:max_drop=0.02"), cand, ref).verdict == "pass"


def test_too_few_queries_is_inconclusive_never_a_silent_pass():
    cand, ref, *_ = _sides(lambda q, t, v: v)  # identical: a point estimate would pass
    for expr in (
        "ndcg@10[topic=rare]:max_drop=0.02",
        "ndcg@10[topic=rare]>=0.1",
        "ndcg@10[topic=rare]:non_inferior=0.02",
        "ndcg@10[topic=rare]:no_significant_drop",
        "ndcg@10[qlen>10000]:max_drop=0.02",
    ):  # the last slice is empty
        out = evaluate_gate(parse_gate(expr), cand, ref)
        assert out.verdict == "inconclusive", expr
        assert "fewer than 10: too few to decide" in out.note
        assert "too few to decide" in explain(out, {})


def test_a_slice_ci_too_wide_is_inconclusive():
    # finance: per-query deltas -0.3 / +0.28 alternate: mean -0.01 passes on its point value, the CI allows -0.1
    cand, ref, *_ = _sides(lambda q, t, v: v + (-0.3 if int(q[1:]) % 2 else 0.28) if t == "finance" else v, seed=1)
    out = evaluate_gate(parse_gate("ndcg@10[topic=finance]:max_drop=0.02"), cand, ref)
    assert -0.02 < out.delta < 0  # bug caught: a point-estimate verdict would pass here
    assert out.verdict == "inconclusive" and "the CI is too wide to decide on this slice" in out.note
    ci = out.comparison.ci
    assert ci.lower_bound < -0.02 <= ci.upper_bound


def test_max_rel_drop_on_a_slice_allows_a_fraction_of_the_slice_reference():
    cand, ref, _, r = _sides(lambda q, t, v: v * 0.97 if t == "finance" else v)  # every query -3%
    assert evaluate_gate(parse_gate("ndcg@10[topic=finance]:max_rel_drop=5%"), cand, ref).verdict == "pass"
    out = evaluate_gate(parse_gate("ndcg@10[topic=finance]:max_rel_drop=1%"), cand, ref)
    assert out.verdict == "fail" and f"-{0.01 * _mean(r, 'finance'):.4g}" in out.note


def test_a_floor_on_a_slice_uses_the_bootstrap_bounds_of_the_slice_mean():
    def floor(expr, change):
        cand, _, c, _ = _sides(change)
        return evaluate_gate(parse_gate(expr), cand, None), c

    high, c = floor("ndcg@10[topic=finance]>=0.6", lambda q, t, v: 0.9 if t == "finance" else 0.1)
    assert (
        high.verdict == "pass" and high.candidate == pytest.approx(0.9) and high.n_queries == 12
    )  # the slice's own size
    assert floor("ndcg@10[topic=finance]>=0.6", lambda q, t, v: 0.3 if t == "finance" else 1.0)[0].verdict == "fail"
    # alternating 0.2 / 1.0: mean 0.6 sits on the floor, the bounds straddle it
    noisy, c = floor("ndcg@10[topic=finance]>=0.6", lambda q, t, v: 0.2 if int(q[1:]) % 2 else 1.0)
    assert noisy.candidate == pytest.approx(_mean(c, "finance")) and noisy.verdict == "inconclusive"
    assert "bounds of the slice mean" in noisy.note


def test_slice_gates_join_the_session_correction():
    cand, ref, *_ = _sides(lambda q, t, v: v - 0.05 if t == "finance" else v)
    gates = [parse_gate("ndcg@10[topic=finance]:no_significant_drop"), parse_gate("ndcg@10:no_significant_drop")]
    out = judge_all([GateRequest(g.expr, g, cand, ref) for g in gates], "holm")
    finance = out[gates[0].expr]
    assert finance.evidence.correction == "holm" and finance.evidence.p_adjusted >= finance.p_value
    assert finance.verdict == "fail" and finance.comparison.ci.n_queries == 12


def test_unknown_field_or_value_lists_the_known_ones():
    index = _index()
    with pytest.raises(
        SpecError,
        match=r"minibeir: gate 'ndcg@10\[domain=x\]>=0.5': the queries have no metadata "
        r"field 'domain'; known fields: topic",
    ):
        check_gate_slices([parse_gate("ndcg@10[domain=x]>=0.5")], index, "minibeir")
    with pytest.raises(
        SpecError,
        match=r"no query has topic='fnance'; topic takes cooking, finance, music, rare, "
        r"sports",
    ):
        check_gate_slices([parse_gate("ndcg@10[topic=fnance]:max_drop=0.02")], index, "minibeir")
    check_gate_slices([parse_gate("ndcg@10[doclen>999]>=0.5"), parse_gate("ndcg@10>=0.5")], index, "minibeir")


def test_a_side_without_slices_cannot_be_sliced():
    cand, ref, *_ = _sides(lambda q, t, v: v)
    bare = Scores("candidate", cand.metrics, cand.per_query)
    with pytest.raises(SpecError, match="has no slice index"):
        evaluate_gate(parse_gate("ndcg@10[topic=finance]:max_drop=0.02"), bare, ref)


def test_the_session_refuses_an_unknown_topic_before_encoding(tiny_model_dir, minibeir_dir, tmp_path):
    from evalsuite.gating.plan import build_plan
    from evalsuite.gating.start import prepared_session

    plan = build_plan(
        file_settings=None,
        file_path=None,
        cwd=tmp_path,
        run_flags={"model": str(tiny_model_dir), "dataset": str(minibeir_dir)},
        session_flags={"gates": ["ndcg@10[topic=fnance]>=0.5"]},
    )
    with pytest.raises(SpecError, match=r"no query has topic='fnance'; topic takes astronomy, cooking, databases"):
        prepared_session(plan, shared_dir=None, worker="main")


def test_slice_by_from_a_spec_file_and_per_dataset(tmp_path, minibeir_dir):
    from evalsuite.gating.plan import build_plan

    settings = {
        "slice_by": ["topic"],
        "datasets": [
            {"name": "a", "path": str(minibeir_dir)},
            {"name": "b", "path": str(minibeir_dir), "slice_by": "doc.x,topic"},
        ],
    }
    plan = build_plan(
        file_settings=settings, file_path=tmp_path / "evalsuite.toml", run_flags={}, session_flags={}, cwd=tmp_path
    )
    assert [d.spec.slice_by for d in plan.datasets] == [("topic",), ("doc.x", "topic")]
    with pytest.raises(SpecError, match=r"slice_by must be a list of strings, got a list \(\[1\]\)"):
        build_plan(
            file_settings={"slice_by": [1]},
            file_path=tmp_path / "evalsuite.toml",
            run_flags={},
            session_flags={},
            cwd=tmp_path,
        )
    with pytest.raises(SpecError, match="slice_by must be a list of metadata field names"):
        build_plan(
            file_settings={"slice_by": ["topic", " "]},
            file_path=tmp_path / "evalsuite.toml",
            run_flags={},
            session_flags={},
            cwd=tmp_path,
        )


def test_a_slice_gate_does_not_decide_its_metrics_row():
    from evalsuite.gating.ledger import CandidateSeen, GateRecord, ReferenceSeen
    from evalsuite.gating.report import gate_line, summary_rows

    cand, ref, *_ = _sides(lambda q, t, v: v - 0.1 - 0.01 * (int(q[1:]) % 3) if t == "finance" else v)
    sliced = evaluate_gate(parse_gate("ndcg@10[topic=finance]:max_drop=0.02"), cand, ref)
    whole = evaluate_gate(parse_gate("ndcg@10:max_drop=0.03"), cand, ref)
    records = [GateRecord("d", "gate[s]", sliced), GateRecord("d", "gate[w]", whole)]
    row = summary_rows(
        CandidateSeen("d", dict(cand.metrics)), ReferenceSeen("d", "baseline", "baseline", dict(ref.metrics)), records
    )[0]
    assert row.verdict == "pass" and row.comparison is whole.comparison  # bug caught: the slice's CI on the row
    line = gate_line(sliced)
    assert line.startswith("FAIL         ndcg@10[topic=finance]:max_drop=0.02: delta ")
    assert "(12 queries); slice [topic=finance] has 12 queries" in line


def test_a_slice_of_exactly_the_minimum_queries_is_gated():
    # 10 queries (MIN_QUERIES) is enough: the slice is judged, never called too few (bug caught: `>` for `>=`)
    from evalsuite.slicing import MIN_QUERIES

    profiles = {f"q{i:02d}": QueryProfile(10, 100, {"topic": "ten" if i < MIN_QUERIES else "rest"}) for i in range(30)}
    index = SliceIndex(64, profiles, ("topic",))
    ref = {q: 0.5 + 0.01 * (int(q[1:]) % 5) for q in profiles}
    cand = {q: v - 0.2 if profiles[q].fields["topic"] == "ten" else v for q, v in ref.items()}
    c = Scores("candidate", {"ndcg@10": float(np.mean(list(cand.values())))}, {"ndcg@10": cand}, index)
    r = Scores("baseline", {"ndcg@10": float(np.mean(list(ref.values())))}, {"ndcg@10": ref})
    out = evaluate_gate(parse_gate("ndcg@10[topic=ten]:max_drop=0.02"), c, r)
    assert out.n_queries == MIN_QUERIES == 10
    assert out.verdict == "fail" and "too few" not in (out.note or "")


def test_an_undecided_non_inferior_slice_counts_the_queries_from_the_slice_differences():
    cand, ref, c, r = _sides(lambda q, t, v: v + (0.04 if int(q[1:]) % 2 else -0.05) if t == "finance" else v)
    out = evaluate_gate(parse_gate("ndcg@10[topic=finance]:non_inferior=0.01"), cand, ref)
    d = np.array([c[q] - r[q] for q in sorted(c) if _index().profiles[q].fields["topic"] == "finance"])
    need = math.ceil(((1.6448536269514722 + 0.8416212335729143) * d.std(ddof=1) / abs(d.mean() + 0.01)) ** 2)
    assert out.verdict == "inconclusive" and out.n_queries == 12 and out.queries_needed == max(need, 2)
