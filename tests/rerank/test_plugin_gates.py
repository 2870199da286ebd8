"""Gates on the reranked stage through the pytest plugin (in-process pytester), with a real first stage, a tiny
random-weight cross-encoder, FAISS and ranx.

The expected values come from `evalsuite rerank`'s own path (:func:`run_two_stage`) or from the baseline file,
never from the session under test; every threshold sits on one side of them. Each test names the one-line
bug it catches.
"""

from __future__ import annotations

import json
import re

import pytest

from evalsuite.model import directory_digest

BASE = ["-p", "no:randomly", "-p", "no:cacheprovider"]


@pytest.fixture
def ce(cross_encoder_dir):
    return str(cross_encoder_dir), directory_digest(cross_encoder_dir)


def _two_stage(model_dir, dataset, ce, depth):
    """The two-stage result as `evalsuite rerank` computes it: the independent side of every comparison."""
    from evalsuite.rerank.run import RerankSpec, run_two_stage
    from evalsuite.run.spec import RunSpec

    spec = RunSpec(
        model=str(model_dir),
        model_rev=directory_digest(model_dir),
        dataset=str(dataset),
        device="cpu",
        use_cache=False,
    )
    (result,) = run_two_stage(spec, RerankSpec(reranker=ce[0], reranker_rev=ce[1], depth=depth), [depth])
    return result


def _args(model_dir, dataset, ce, depth, *extra):
    model = ["--model", str(model_dir), "--model-rev", directory_digest(model_dir), "--dataset", str(dataset)]
    rerank = ["--reranker", ce[0], "--reranker-rev", ce[1], "--rerank-depth", str(depth)]
    return [*BASE, *model, "--no-cache", "--device", "cpu", *rerank, *extra]


def _gates(pytester, dataset="small"):
    report = json.loads((pytester.path / "reports" / "evalsuite" / dataset / "results.json").read_text())
    return report, {o["gate"]: o for o in report["gates"]}


def test_reranked_floors_and_the_gain_on_either_side_of_the_achieved_values(
    pytester, model_stack_loaded, tiny_model_dir, small_beir, ce
):
    """A floor just above the reranked stage's achieved ndcg@10 fails and one just below passes; min_gain passes
    below the gain's lower bound, fails above its upper bound and is inconclusive (xfail here) between.
    Bugs caught: the floor reading the first stage (the reranked and first-stage values differ by more than the
    margins), a flipped floor comparison, the gain's bounds swapped, an inconclusive gain not following
    --inconclusive."""
    expected = _two_stage(tiny_model_dir, small_beir, ce, 3)
    value, first = expected.metrics["ndcg@10"], expected.first.metrics["ndcg@10"]
    gain = expected.gain("ndcg@10")
    assert abs(value - first) > 0.01  # else a gate on the wrong stage could not be told apart
    assert gain.lower_bound is not None and gain.high is not None and gain.high - gain.lower_bound > 0.02
    above, below = f"ndcg@10[stage=reranked]>={value + 0.0005:.6f}", f"ndcg@10[stage=reranked]>={value - 0.0005:.6f}"
    low, high = f"ndcg@10:min_gain={gain.lower_bound - 0.01:.6f}", f"ndcg@10:min_gain={gain.high + 0.01:.6f}"
    middle = f"ndcg@10:min_gain={(gain.lower_bound + gain.high) / 2:.6f}"
    xml = pytester.path / "junit.xml"
    gates = [x for g in (above, below, low, high, middle) for x in ("--gate", g)]
    result = pytester.runpytest(
        *_args(tiny_model_dir, small_beir, ce, 3, *gates, "--inconclusive", "xfail", f"--junitxml={xml}", "-v")
    )
    result.assert_outcomes(passed=2 + 2, failed=2, xfailed=1)
    out = result.stdout.str()
    assert f"ndcg@10 (reranked stage) = {value:.4f} is below the floor {value + 0.0005:g}" in out
    assert "the reranker brings less than required" in out and "first stage " in out and "reranked " in out
    assert "computed reranked-small in main" in out

    report, rows = _gates(pytester)
    assert {g: rows[g]["verdict"] for g in (above, below, low, high, middle)} == {
        above: "fail",
        below: "pass",
        low: "pass",
        high: "fail",
        middle: "inconclusive",
    }
    assert rows[above]["stage"] == "reranked" and rows[above]["candidate"] == pytest.approx(value, abs=1e-9)
    assert rows[low]["reference"] == pytest.approx(first, abs=1e-9)  # the gain pairs the candidate's first stage
    assert rows[low]["delta"] == pytest.approx(value - first, abs=1e-9)
    assert [d["depth"] for d in report["reranked"]] == [3]  # the schema of a two-stage run's results.json
    assert report["reranked"][0]["metrics"]["ndcg@10"] == pytest.approx(value, abs=1e-6)
    md = (pytester.path / "reports" / "evalsuite" / "small" / "report.md").read_text()
    assert "## Reranked stage" in md and "| reranked − first |" in md
    junit = xml.read_text()
    assert re.search(r'name="stage" value="reranked"', junit)
    assert f'name="ndcg@10[stage=reranked]" value="{round(value, 6)}"' in junit


def test_reranked_drop_against_a_reference_revision_uses_the_same_reranker_over_its_first_stage(
    pytester, model_stack_loaded, tiny_model_dir, make_tiny_bert, small_beir, ce, tmp_path
):
    """Bugs caught: the reference side read at its first stage, or the candidate's first stage reranked for the
    reference (the three values differ, so either would show)."""
    other = make_tiny_bert(tmp_path / "other", seed=1)
    cand = _two_stage(tiny_model_dir, small_beir, ce, 2)
    ref = _two_stage(other, small_beir, ce, 2)
    per_query = ref.per_query["ndcg@10"]
    assert per_query != cand.per_query["ndcg@10"] and per_query != ref.first.per_query["ndcg@10"]
    gate = "ndcg@10[stage=reranked]:max_drop=1.0"
    result = pytester.runpytest(
        *_args(tiny_model_dir, small_beir, ce, 2, "--reference-model", str(other), "--reference-rev"),
        directory_digest(other),
        "--gate",
        gate,
        "-v",  # the summary names who computed what with -v
    )
    result.assert_outcomes(passed=3)
    assert "computed reference-reranked-small in main" in result.stdout.str()
    report, rows = _gates(pytester)
    assert rows[gate]["reference"] == pytest.approx(ref.metrics["ndcg@10"], abs=1e-9)
    assert rows[gate]["candidate"] == pytest.approx(cand.metrics["ndcg@10"], abs=1e-9)
    assert report["reference"]["reranked"]["metrics"]["ndcg@10"] == pytest.approx(ref.metrics["ndcg@10"])


@pytest.mark.integration
def test_bundled_model_baseline_round_trip_with_the_reranked_stage(
    pytester, bundled_model_loaded, minibeir_dir, ce, tmp_path
):
    """The bundled MiniLM on the fixtures, its top 10 reranked: --update-baseline writes the reranked stage, the
    next session gates it (floors on either side of the value the file holds, no drop, non-inferiority on a
    slice); a reranker changed since is named by the contract item, and a baseline without the reranked stage
    stops the session with one line naming the file.
    Bugs caught: the baseline written without the reranked scores, the reranked gates compared with the
    baseline's first stage, an old baseline read silently."""
    from evalsuite.model import bundled_model_dir

    rev = directory_digest(bundled_model_dir())
    common = [*BASE, "--model-rev", rev, "--dataset", str(minibeir_dir), "--device", "cpu"]
    common += ["--cache-dir", str(tmp_path / "cache"), "--reranker", ce[0], "--reranker-rev", ce[1]]
    common += ["--rerank-depth", "10"]
    pytester.runpytest(*common, "--update-baseline", "--baseline", "b.json").assert_outcomes(passed=2)
    data = json.loads((pytester.path / "b.json").read_text())
    stage = data["reranked"]
    assert stage["depth"] == 10 and stage["reranker"]["model_revision"] == ce[1]
    assert len(stage["per_query"]["ndcg@10"]) == len(data["per_query"]["ndcg@10"]) > 100
    value, first = stage["metrics"]["ndcg@10"], data["metrics"]["ndcg@10"]
    assert abs(value - first) > 0.002

    gates = [
        f"ndcg@10[stage=reranked]>={value + 0.0005:.6f}",
        f"ndcg@10[stage=reranked]>={value - 0.0005:.6f}",
        "ndcg@10[stage=reranked]:max_drop=0",
        "ndcg@10[stage=reranked,topic=finance]:non_inferior=0.01",
        "ndcg@10:min_gain=-1",
    ]
    run = pytester.runpytest(*common, "--baseline", "b.json", *[x for g in gates for x in ("--gate", g)])
    run.assert_outcomes(passed=2 + 4, failed=1)
    _, rows = _gates(pytester, "minibeir")
    assert [rows[g]["verdict"] for g in gates] == ["fail", "pass", "pass", "pass", "pass"]
    drop = rows["ndcg@10[stage=reranked]:max_drop=0"]
    assert drop["reference"] == pytest.approx(value) and drop["delta"] == pytest.approx(0.0, abs=1e-9)
    assert rows["ndcg@10[stage=reranked,topic=finance]:non_inferior=0.01"]["slice_queries"] >= 10

    changed = pytester.runpytest(
        *common, "--baseline", "b.json", "--reranker-max-length", "64", "--gate", gates[2], "-k", "contract"
    )
    changed.assert_outcomes(failed=1)
    assert "reranker max_length: baseline " in changed.stdout.str()
    assert "  max_length: baseline" not in changed.stdout.str()  # the embedding model's own max length is untouched

    del data["reranked"]
    (pytester.path / "old.json").write_text(json.dumps(data))
    old = pytester.runpytest(*common, "--baseline", "old.json", "--gate", "ndcg@10[stage=reranked]:max_drop=0.01")
    assert old.ret == pytest.ExitCode.USAGE_ERROR
    err = [line for line in old.stderr.str().splitlines() if line.strip()]
    assert len(err) == 1 and str(pytester.path / "old.json") in err[0]
    assert "no reranked stage" in err[0] and "regenerate it with --update-baseline --reranker DIR" in err[0]


def test_xdist_workers_rerank_once(pytester, model_stack_loaded, tiny_model_dir, small_beir, ce):
    """Under pytest -n 2 one worker reranks, the other reads its pickle, and the controller's report has the
    reranked stage. Bug caught: the reranked stage computed outside the session's compute-once (once per
    worker, or missing from the controller's report)."""
    gates = ["ndcg@10[stage=reranked]>=0.0", "mrr@10[stage=reranked]>=0.0", "ndcg@10:min_gain=-1"]
    result = pytester.runpytest(
        *_args(tiny_model_dir, small_beir, ce, 3, "-n", "2", "-v", *[x for g in gates for x in ("--gate", g)])
    )
    result.assert_outcomes(passed=2 + 3)
    computed = [line for line in result.stdout.str().splitlines() if line.startswith("computed ")]
    # once each, by whichever worker asked first (not always the same one: the ledgers merge as workers finish)
    assert sorted(line.split(" in ")[0] for line in computed) == ["computed candidate-small", "computed reranked-small"]
    assert all(" in gw" in line for line in computed)
    report, rows = _gates(pytester)
    assert set(rows) == set(gates) and set(report["reranked"][0]["metrics"]) >= {"ndcg@10", "mrr@10"}
