"""Session policy and plan, decided before anything is encoded: no model is loaded here."""

from pathlib import Path

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.gating.plan import build_plan
from evalsuite.gating.policy import session_policy
from evalsuite.scoring.metrics import DEFAULT_METRICS
from evalsuite.sweep.axes import parse_vary


def plan(tmp_path: Path, *, file: dict | None = None, pinned: bool = True, **session_flags):
    run_flags = {} if file and ("datasets" in file or "dataset" in file) else {"dataset": "data/small"}
    if pinned:
        run_flags["model_rev"] = "0123abc"
    return build_plan(
        file_settings=file,
        file_path=tmp_path / "evalsuite.toml" if file else None,
        run_flags=run_flags,
        session_flags=session_flags,
        cwd=tmp_path,
    )


def exprs(gates):
    return [g.expr for g in gates]


def test_a_baseline_without_gates_gets_default_gates_on_its_metrics(tmp_path):
    p = plan(tmp_path, baseline="b.json")
    policy = session_policy(p, {"small": ("mrr@10", "ndcg@10", "map@5")}).dataset("small")
    assert policy.compare_with == "baseline"
    # the baseline's metrics this session computes, in the baseline's order; map@5 is not computed
    assert exprs(policy.gates) == ["mrr@10:max_drop=0.01", "ndcg@10:max_drop=0.01"]
    assert policy.sweep_gates == ()
    assert policy.notes == (
        "small: no gates given; default gates applied: mrr@10:max_drop=0.01, ndcg@10:max_drop=0.01",
    )


def test_a_baseline_with_no_metric_in_common_falls_back_to_the_session_metrics(tmp_path):
    policy = session_policy(plan(tmp_path, baseline="b.json"), {"small": ("map@5",)}).dataset("small")
    assert exprs(policy.gates) == [f"{m}:max_drop=0.01" for m in DEFAULT_METRICS]


def test_a_reference_run_compares_every_session_metric(tmp_path):
    policy = session_policy(plan(tmp_path, reference_rev="abc"), {}).dataset("small")
    assert policy.compare_with == "reference"
    assert exprs(policy.gates) == [f"{m}:max_drop=0.01" for m in DEFAULT_METRICS]


def test_given_gates_are_kept_as_given(tmp_path):
    p = plan(tmp_path, baseline="b.json", gates=["ndcg@10>=0.3", "mrr@10:no_significant_drop"])
    policy = session_policy(p, {"small": ("ndcg@10", "mrr@10")}).dataset("small")
    assert exprs(policy.gates) == ["ndcg@10>=0.3", "mrr@10:no_significant_drop"] and policy.notes == ()


def test_floors_need_no_reference(tmp_path):
    policy = session_policy(plan(tmp_path, gates=["ndcg@10>=0.3"]), {}).dataset("small")
    assert policy.compare_with is None and exprs(policy.gates) == ["ndcg@10>=0.3"] and policy.notes == ()


def test_a_relative_gate_without_a_reference_is_an_error(tmp_path):
    p = plan(tmp_path, gates=["ndcg@10>=0.3", "ndcg@10:max_drop=0.01"])
    with pytest.raises(
        SpecError,
        match=r"small: gate\(s\) ndcg@10:max_drop=0.01 compare against a reference; "
        r"pass --baseline FILE or --reference-rev REV",
    ):
        session_policy(p, {})


def test_with_a_sweep_a_relative_gate_without_a_reference_gates_the_cells_only(tmp_path):
    p = plan(tmp_path, gates=["ndcg@10>=0.3", "ndcg@10:max_drop=0.01"], vary=["pooling=cls,mean"])
    policy = session_policy(p, {}).dataset("small")
    assert exprs(policy.gates) == ["ndcg@10>=0.3"]  # the relative gate is no item of its own
    assert exprs(policy.sweep_gates) == ["ndcg@10>=0.3", "ndcg@10:max_drop=0.01"]
    assert policy.notes == ("small: no baseline; gate(s) ndcg@10:max_drop=0.01 apply to sweep cells only",)


def test_a_sweep_without_gates_gates_its_cells_with_default_gates(tmp_path):
    policy = session_policy(plan(tmp_path, vary=["dim=16"]), {}).dataset("small")
    assert policy.gates == ()
    assert exprs(policy.sweep_gates) == [f"{m}:max_drop=0.01" for m in DEFAULT_METRICS]
    assert policy.notes[0].startswith("small: sweep cells gated against the base with default gates: ")


def test_updating_a_baseline_keeps_relative_gates_and_applies_no_defaults(tmp_path):
    p = plan(tmp_path, baseline="b.json", update_baseline=True, gates=["ndcg@10:max_drop=0.01"])
    policy = session_policy(p, {}).dataset("small")
    assert policy.compare_with is None  # the baseline is being written, not read
    assert exprs(policy.gates) == ["ndcg@10:max_drop=0.01"] and policy.notes == ()
    empty = session_policy(plan(tmp_path, baseline="b.json", update_baseline=True), {}).dataset("small")
    assert empty.gates == () and empty.notes == ()


def test_a_baseline_and_a_reference_run_are_exclusive(tmp_path):
    with pytest.raises(SpecError, match="both a baseline file and a reference run"):
        plan(tmp_path, baseline="b.json", reference_rev="abc")
    # writing the baseline from a session that also names a reference run is allowed
    assert plan(tmp_path, baseline="b.json", reference_rev="abc", update_baseline=True).update_baseline


def test_update_baseline_needs_a_path(tmp_path):
    with pytest.raises(SpecError, match="--update-baseline needs a baseline path"):
        plan(tmp_path, update_baseline=True)


def test_paths_resolve_against_the_command_line_or_the_spec_file(tmp_path):
    from_flags = plan(tmp_path, baseline="b.json")
    assert from_flags.datasets[0].spec.dataset == str(tmp_path / "data" / "small")
    assert from_flags.datasets[0].baseline == tmp_path / "b.json"
    spec_dir = tmp_path / "gates"
    from_file = build_plan(
        file_settings={"datasets": [{"name": "x", "path": "../data/x", "baseline": "b/x.json"}]},
        file_path=spec_dir / "evalsuite.toml",
        run_flags={},
        session_flags={},
        cwd=tmp_path,
    )
    ds = from_file.datasets[0]
    assert (ds.name, ds.spec.dataset, ds.baseline) == ("x", str(spec_dir / "../data/x"), spec_dir / "b/x.json")


def test_dataset_entries_accept_only_documented_keys(tmp_path):
    with pytest.raises(SpecError, match=r"datasets\[0\]: unknown key\(s\) \['_cli'\]"):
        build_plan(
            file_settings={"datasets": [{"path": "x", "_cli": True}]},
            file_path=tmp_path / "evalsuite.toml",
            run_flags={},
            session_flags={},
            cwd=tmp_path,
        )


def test_one_baseline_flag_for_several_datasets_is_an_error(tmp_path):
    file = {"datasets": [{"name": "a", "path": "a"}, {"name": "b", "path": "b"}]}
    with pytest.raises(SpecError, match="--baseline names one file but the spec has several datasets"):
        plan(tmp_path, file=file, baseline="b.json")


def test_flags_win_over_the_file(tmp_path):
    file = {"dataset": "d", "gates": ["ndcg@10>=0.1"], "sweep": ["pooling=cls"]}
    p = plan(tmp_path, file=file, gates=["mrr@10>=0.2"], vary=["dim=16"])
    ds = p.datasets[0]
    assert exprs(ds.gates) == ["mrr@10>=0.2"] and ds.sweep == tuple(parse_vary(["dim=16"]))


def test_gate_flags_replace_the_spec_files_gates_and_say_which(tmp_path):
    """--gate replaces (never merges with) the spec file's gates; the gates it dropped are named in the notes."""
    (tmp_path / "d").mkdir()
    file = {
        "gates": ["ndcg@10>=0.5"],
        "datasets": [
            {"name": "a", "path": "d", "baseline": "a.json", "gates": ["ndcg@10>=0.7", "mrr@10:max_drop=0.01"]},
            {"name": "b", "path": "d", "baseline": "b.json"},
        ],
    }
    p = plan(tmp_path, file=file, gates=["mrr@10:max_drop=0.01"])
    policy = session_policy(p, {"a": ("ndcg@10", "mrr@10"), "b": ("ndcg@10", "mrr@10")})
    assert exprs(policy.dataset("a").gates) == ["mrr@10:max_drop=0.01"]
    assert policy.dataset("a").notes == (
        "a: --gate replaces the spec file's gates; not judged: ndcg@10>=0.7 (repeat them with --gate to keep them)",
    )
    assert policy.dataset("b").notes == (
        "b: --gate replaces the spec file's gates; not judged: ndcg@10>=0.5 (repeat them with --gate to keep them)",
    )
    # without --gate the spec's gates stand and nothing is said
    same = session_policy(plan(tmp_path, file=file), {"a": ("ndcg@10",), "b": ("ndcg@10",)})
    assert exprs(same.dataset("a").gates) == ["ndcg@10>=0.7", "mrr@10:max_drop=0.01"] and same.notes == ()


def test_unpinned_gates_say_so_and_pinned_ones_do_not(tmp_path):
    """A gate with no --model-rev judges whatever the model directory holds now: the session says so."""
    unpinned = session_policy(plan(tmp_path, pinned=False, gates=["ndcg@10>=0.3"]), {}).dataset("small")
    assert unpinned.notes == (
        "small: the model revision is not pinned (--model-rev): the gates judge whatever the bundled model holds "
        "now; 'evalsuite model-rev' prints the revision to pin",
    )
    assert session_policy(plan(tmp_path, gates=["ndcg@10>=0.3"]), {}).dataset("small").notes == ()
    # nothing gated (no gates, no baseline): nothing to say
    assert session_policy(plan(tmp_path, pinned=False), {}).dataset("small").notes == ()
