"""The pytest plugin, exercised with pytester on the tiny random BERT (fast) and the real model."""

import json
import subprocess
import sys

import pytest

from evalsuite.model import directory_digest

from .conftest import BASE, plugin_args


def _args(tiny, small_beir, *extra):
    return plugin_args(tiny[0], small_beir, *extra)


def test_plugin_import_is_light():
    code = (
        "import sys, evalsuite.pytest_plugin, evalsuite.run.options, evalsuite.gating.kinds, evalsuite.gating.plan, "
        "evalsuite.gating.policy, evalsuite.gating.report; "
        "heavy = [m for m in ('torch', 'faiss', 'transformers', 'numba', 'ranx') if m in sys.modules]; "
        "print(heavy); sys.exit(bool(heavy))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_inert_without_options(pytester):
    pytester.makepyfile("def test_user():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest(*BASE)
    result.assert_outcomes(passed=1)
    assert "== evalsuite ==" not in result.stdout.str() and "::evalsuite::" not in result.stdout.str()


def test_floor_gate_pass_and_fail(pytester, tiny, small_beir):
    result = pytester.runpytest(*_args(tiny, small_beir, "--gate", "ndcg@10>=0.0", "--gate", "ndcg@10>=1.5"))
    result.assert_outcomes(passed=3, failed=1)  # contract, integrity, floor 0.0 / floor 1.5
    out = result.stdout.str()
    assert "is below the floor 1.5" in out and "ndcg@10 = " in out
    assert "Traceback" not in out and "session.py" not in out  # internal frames hidden
    assert result.ret == 1
    assert "evalsuite::small::gate[ndcg@10>=1.5]" in out
    report = json.loads((pytester.path / "reports" / "evalsuite" / "small" / "results.json").read_text())
    assert {o["gate"] for o in report["gates"]} == {"ndcg@10>=0.0", "ndcg@10>=1.5"}
    assert (pytester.path / "reports" / "evalsuite" / "small" / "report.md").read_text().count("FAIL") >= 1


def test_items_selectable_with_k(pytester, tiny, small_beir):
    result = pytester.runpytest(*_args(tiny, small_beir, "--gate", "ndcg@10>=0.0", "-k", "contract"))
    result.assert_outcomes(passed=1, deselected=2)
    # the plugin's items are counted as collected: 3 collected, 2 deselected, 1 run
    result.stdout.fnmatch_lines(["collected 3 items / 2 deselected / 1 selected"])


def test_wrong_revision_stops_before_encoding(run_evalsuite, pytester, tiny, small_beir, tiny_model_dir):
    model, rev = tiny
    run = run_evalsuite(*BASE, "--model", model, "--model-rev", "0" * 64, "--dataset", str(small_beir))
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    err = run.result.stderr.str()
    assert "0" * 64 in err and rev in err
    assert run.report is None and not (pytester.path / "reports").exists()  # nothing was encoded or written


def test_bad_values_rejected_at_parse_time(pytester):
    result = pytester.runpytest(*BASE, "--pooling", "median")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "invalid choice: 'median'" in result.stderr.str()
    result = pytester.runpytest(*BASE, "--gate", "ndcg@10~0.3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "is not understood" in result.stderr.str()


def test_update_baseline_then_mismatch_and_drop(run_evalsuite, pytester, tiny, small_beir, tiny_model_dir):
    from evalsuite.gating.ledger import BaselineWritten

    baseline = pytester.path / "b.json"
    first = run_evalsuite(
        *_args(
            tiny, small_beir, "--update-baseline", "--baseline", str(baseline), "--gate", "ndcg@10:max_drop=0.0", "-rs"
        )
    )
    first.result.assert_outcomes(passed=2, skipped=1)
    # the skip is reported at the item, not inside pytest's runner
    first.result.stdout.fnmatch_lines(
        ["SKIPPED [[]1[]] *:1: gate[[]ndcg@10:max_drop=0.0[]]: baseline updated in this*"]
    )
    assert "_pytest" not in first.result.stdout.str()
    assert first.report.baselines_written == (BaselineWritten("small", baseline),)
    data = json.loads(baseline.read_text())
    assert data["manifest"]["contract"]["pooling"] == "mean" and "per_query" in data
    # same settings: passes against the baseline, default gates stated (the note is the feature)
    same = run_evalsuite(*_args(tiny, small_beir, "--baseline", str(baseline)))
    same.result.assert_outcomes(passed=2 + 4)
    assert "default gates applied: ndcg@10:max_drop=0.01" in same.result.stdout.str()
    results = same.report.dataset("small").results
    assert {o["gate"] for o in results["gates"]} == {f"{m}:max_drop=0.01" for m in data["metrics"]}
    assert all(o["passed"] and o["delta"] == pytest.approx(0.0, abs=1e-6) for o in results["gates"])
    # another pooling: the contract item fails and names the field
    cls = pytester.runpytest(
        *_args(tiny, small_beir, "--baseline", str(baseline), "--pooling", "cls", "--gate", "ndcg@10:max_drop=1.0")
    )
    out = cls.stdout.str()
    assert "pooling: baseline 'mean', candidate 'cls'" in out
    assert "Not intended: that is the fault" in out and "deltas first; only if they are acceptable" in out
    cls.assert_outcomes(passed=2, failed=1)


def test_relative_gate_without_reference_is_a_usage_error(pytester, tiny, small_beir):
    result = pytester.runpytest(*_args(tiny, small_beir, "--gate", "ndcg@10:max_drop=0.01"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "compare against a reference; pass --baseline FILE or --reference-rev REV" in result.stderr.str()


def test_missing_or_corrupt_baseline(pytester, tiny, small_beir):
    result = pytester.runpytest(*_args(tiny, small_beir, "--baseline", "nope.json"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "baseline file not found; create it with --update-baseline" in result.stderr.str()
    (pytester.path / "bad.json").write_text("{not json")
    result = pytester.runpytest(*_args(tiny, small_beir, "--baseline", "bad.json"))
    assert "bad.json:1: baseline is not valid JSON" in result.stderr.str()


def test_reference_revision_ab(run_evalsuite, tiny, small_beir, make_tiny_bert, tmp_path):
    other = make_tiny_bert(tmp_path / "other", seed=1)
    other_rev = directory_digest(other)
    run = run_evalsuite(
        *_args(
            tiny,
            small_beir,
            "--reference-model",
            str(other),
            "--reference-rev",
            other_rev,
            "--gate",
            "ndcg@10:max_drop=1.0",
            "--gate",
            "mrr@10:no_significant_drop",
        )
    )
    run.result.assert_outcomes(passed=4)  # contract ignores revisions; gates compare with the reference run
    assert sorted(c.what for c in run.report.computations) == ["candidate", "reference"]
    small = run.report.dataset("small")
    assert small.side == "reference"
    assert small.results["reference"]["label"] == f"reference {other_rev[:12]}"
    ref = small.results["reference"]["metrics"]
    for o in small.results["gates"]:  # each gate compared the candidate with the reference run's value
        assert o["reference"] == pytest.approx(ref[o["metric"]])
        assert o["delta"] == pytest.approx(small.results["metrics"][o["metric"]] - ref[o["metric"]], abs=1e-5)


def test_junit_properties(pytester, tiny, small_beir):
    xml = pytester.path / "junit.xml"
    pytester.runpytest(*_args(tiny, small_beir, "--gate", "ndcg@10>=0.0", f"--junitxml={xml}"))
    text = xml.read_text()
    assert 'property name="ndcg@10"' in text and 'property name="model_revision"' in text


def test_spec_file_with_two_datasets(pytester, tiny, small_beir, make_beir, tmp_path):
    model, rev = tiny
    second = make_beir(
        tmp_path / "second",
        [{"_id": "a", "text": "bread dough and yeast"}, {"_id": "b", "text": "basketball court rule"}],
        [{"_id": "x", "text": "why does bread rise"}],
        [("x", "a", 1)],
    )
    pytester.makefile(
        ".toml",
        evalsuite=f"""
model = "{model}"
model_rev = "{rev}"
device = "cpu"
use_cache = false
metrics = ["ndcg@10", "mrr@10"]
gates = ["ndcg@10>=0.0"]

[[datasets]]
name = "first"
path = "{small_beir}"

[[datasets]]
name = "second"
path = "{second}"
gates = ["mrr@10>=0.0", "ndcg@10>=0.0"]
""",
    )
    result = pytester.runpytest(*BASE, "-v")
    result.assert_outcomes(passed=2 + 1 + 2 + 2)
    out = result.stdout.str()
    assert "evalsuite::first::gate[ndcg@10>=0.0]" in out and "evalsuite::second::gate[mrr@10>=0.0]" in out
    # command-line options override the file
    result = pytester.runpytest(*BASE, "--gate", "ndcg@10>=5")
    result.assert_outcomes(passed=4, failed=2)


def test_spec_in_pyproject_and_bad_key(pytester, tiny, small_beir):
    model, rev = tiny
    pytester.makefile(
        ".toml",
        pyproject=f"""
[tool.evalsuite]
model = "{model}"
model_rev = "{rev}"
dataset = "{small_beir}"
use_cache = false
poolng = "cls"
""",
    )
    result = pytester.runpytest(*BASE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown setting 'poolng'" in result.stderr.str()


def test_fixtures_for_user_tests(run_evalsuite, pytester, tiny, small_beir):
    pytester.makepyfile("""
def test_similarity_canary(evalsuite_encoder):
    sim = evalsuite_encoder.similarity
    assert sim("database transaction commit", "database transaction commit") > 0.99

def test_result_and_dataset(evalsuite_result, evalsuite_dataset):
    assert set(evalsuite_result.metrics) >= {"ndcg@10"}
    assert evalsuite_dataset.identity.n_documents == 6
    assert evalsuite_result.doc_vectors.shape == (6, 32)
""")
    run = run_evalsuite(*_args(tiny, small_beir))
    run.result.assert_outcomes(passed=2 + 2)
    assert [(c.what, c.dataset) for c in run.report.computations] == [("candidate", "small")]  # shared


def test_xdist_encodes_each_dataset_once(run_evalsuite, pytester, tiny, small_beir):
    pytester.makepyfile("""
def test_uses_result(evalsuite_result):
    assert evalsuite_result.metrics
""")
    run = run_evalsuite(
        *_args(
            tiny, small_beir, "-n", "2", "--gate", "ndcg@10>=0.0", "--gate", "mrr@10>=0.0", "--gate", "recall@10>=0.0"
        )
    )
    run.result.assert_outcomes(passed=1 + 2 + 3)
    # one worker computed the candidate, the other read it; the controller merged both ledgers
    computed = run.report.computations
    assert [(c.what, c.dataset) for c in computed] == [("candidate", "small")]
    assert computed[0].worker.startswith("gw")
    gates = json.loads((pytester.path / "reports" / "evalsuite" / "small" / "results.json").read_text())["gates"]
    assert sorted(o["gate"] for o in gates) == ["mrr@10>=0.0", "ndcg@10>=0.0", "recall@10>=0.0"]
    out = run.result.stdout.str()
    assert out.count("== evalsuite ==") == 1 or out.count("evalsuite ===") == 1


@pytest.mark.integration
def test_real_model_cls_pooling_regresses_against_baseline(pytester, minibeir_dir, bundled_model_loaded):
    rev = directory_digest(__import__("evalsuite.model", fromlist=["x"]).bundled_model_dir())
    common = [*BASE, "--model-rev", rev, "--dataset", str(minibeir_dir), "--no-cache", "--device", "cpu"]
    pytester.runpytest(*common, "--update-baseline", "--baseline", "b.json").assert_outcomes(passed=2)
    result = pytester.runpytest(*common, "--baseline", "b.json", "--pooling", "cls", "--gate", "ndcg@10:max_drop=0.01")
    assert result.ret == 1
    out = result.stdout.str()
    assert "ndcg@10: baseline 0." in out and ", candidate 0." in out and "allowed drop 0.01" in out
    assert "queries that lost most:" in out


def test_sweep_cells_are_items_gated_against_the_base(run_evalsuite, pytester, tiny, small_beir):
    run = run_evalsuite(
        *_args(
            tiny,
            small_beir,
            "--vary",
            "pooling=cls,mean",
            "--vary",
            "dim=16",
            "--gate",
            "ndcg@10:max_drop=1.0",
            "--gate",
            "ndcg@10>=2",
            "-v",
        )
    )
    out = run.result.stdout.str()
    assert "evalsuite::small::sweep[pooling=cls]" in out and "evalsuite::small::sweep[dim=16]" in out
    assert "sweep cell pooling=cls against the base contract" in out
    assert "ndcg@10 = " in out and "below the floor 2" in out
    assert [c.what for c in run.report.computations].count("sweep") == 1  # one sweep serves every cell item
    run.result.assert_outcomes(passed=2, failed=1 + 3)  # the floor of 2 fails as an item and in every cell
    cells = [o for o in run.report.dataset("small").results["gates"] if o["item"].startswith("sweep[")]
    assert {(o["item"], o["gate"], o["passed"]) for o in cells} == {
        (f"sweep[{c}]", g, g != "ndcg@10>=2")
        for c in ("pooling=cls", "pooling=mean", "dim=16")
        for g in ("ndcg@10:max_drop=1.0", "ndcg@10>=2")
    }
    sweep = json.loads((pytester.path / "reports" / "evalsuite" / "small" / "sweep" / "sweep.json").read_text())
    assert {c["name"] for c in sweep["cells"]} >= {"pooling=cls", "dim=16"}


def test_sweep_from_spec_file_and_bad_axis(pytester, tiny, small_beir):
    model, rev = tiny
    pytester.makefile(
        ".toml",
        evalsuite=f"""
model = "{model}"
model_rev = "{rev}"
use_cache = false
gates = ["ndcg@10:max_drop=1.0"]

[[datasets]]
name = "s"
path = "{small_beir}"
sweep = ["pooling=cls,last"]
""",
    )
    result = pytester.runpytest(*BASE, "-v")
    result.assert_outcomes(passed=2 + 2)
    assert "evalsuite::s::sweep[pooling=last]" in result.stdout.str()
    assert "apply to sweep cells only" in result.stdout.str()
    bad = pytester.runpytest(*BASE, "--vary", "colour=red")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


def test_fixture_encoder_still_works_after_a_sweep_without_cache(pytester, tiny, small_beir):
    pytester.makepyfile(
        test_zz_after="""
def test_encoder_after_sweep(evalsuite_session, evalsuite_encoder):
    evalsuite_session.sweeps.result("small")  # runs (and frees) the sweep's own encoders first
    assert evalsuite_encoder.similarity("bread dough", "bread dough") > 0.99
"""
    )
    result = pytester.runpytest(
        *_args(tiny, small_beir, "--vary", "pooling=cls", "--gate", "ndcg@10>=0.0", "-p", "no:randomly")
    )
    result.assert_outcomes(passed=2 + 1 + 1 + 1)


def test_explicit_spec_path(pytester, tiny, small_beir):
    model, rev = tiny
    (pytester.path / "gates").mkdir()
    (pytester.path / "gates" / "release.toml").write_text(
        f'model = "{model}"\nmodel_rev = "{rev}"\ndataset = "{small_beir}"\nuse_cache = false\n'
        'gates = ["ndcg@10>=0.0"]\n'
    )
    pytester.runpytest(*BASE, "--evalsuite-spec", "gates/release.toml").assert_outcomes(passed=3)
    missing = pytester.runpytest(*BASE, "--evalsuite-spec", "nope.toml")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    assert "--evalsuite-spec nope.toml: file not found" in missing.stderr.str()


def test_sweep_as_a_table_in_the_spec_file(pytester, tiny, small_beir):
    model, rev = tiny
    pytester.makefile(
        ".toml",
        evalsuite=f"""
model = "{model}"
model_rev = "{rev}"
dataset = "{small_beir}"
use_cache = false
gates = ["ndcg@10:max_drop=1.0"]
sweep = {{pooling = ["cls"], dim = [16]}}
""",
    )
    result = pytester.runpytest(*BASE, "-v")
    result.assert_outcomes(passed=2 + 2)
    out = result.stdout.str()
    assert "sweep[pooling=cls]" in out and "sweep[dim=16]" in out


def test_a_rerun_session_reads_its_results_back(pytester, tiny, small_beir, tmp_path):
    model, rev = tiny
    args = [*BASE, "--model", model, "--model-rev", rev, "--dataset", str(small_beir), "--device", "cpu"]
    args += ["--cache-dir", str(tmp_path / "cache"), "--gate", "ndcg@10>=0.0"]
    path = pytester.path / "reports" / "evalsuite" / "small" / "results.json"
    reports = []
    for _ in range(2):
        pytester.runpytest(*args).assert_outcomes(passed=3)
        reports.append(json.loads(path.read_text()))
    assert [r["timing"]["result_cache"]["status"] for r in reports] == ["miss", "hit"]
    assert reports[0]["metrics"] == reports[1]["metrics"] and reports[0]["per_query"] == reports[1]["per_query"]
