"""The Python front door: ``evalsuite.evaluate`` / ``sweep`` return what `evalsuite run` / `sweep` write, take the
commands' options as keywords (checked by the same parsers), compare two runs with paired CIs, and ``import
evalsuite`` stays cheap."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import evalsuite
from evalsuite.base.errors import ContractError, SpecError
from evalsuite.cli import main

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "faiss", "ranx", "transformers", "numba", "numpy", "evalsuite.run.pipeline")


def test_importing_evalsuite_and_naming_the_front_door_loads_nothing_heavy() -> None:
    """Bugs caught: the package importing evalsuite.api eagerly, the api importing the pipeline at module level."""
    code = (
        "import sys, evalsuite; "
        "names = [evalsuite.evaluate, evalsuite.Evaluation, evalsuite.RunComparison, evalsuite.__version__]; "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_job_package_is_also_its_function_whatever_was_imported_first() -> None:
    """``evalsuite.canary`` stays the package (its submodules import and patch as before) and runs the job when
    called; importing a submodule first (which sets the attribute) changes neither. Bug caught: the import system
    replacing the function by the package, or the package by the function."""
    code = (
        "import evalsuite.canary.runner as r, evalsuite, evalsuite.audit.job, evalsuite.api; "
        "print(callable(evalsuite.canary), evalsuite.canary.runner is r, callable(evalsuite.audit), "
        "callable(evalsuite.sweep), evalsuite.sweep.parse_vary.__module__, evalsuite.api.sweep.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split() == ["True", "True", "True", "True", "evalsuite.sweep.axes", "sweep"], out.stderr
    with pytest.raises(SpecError, match=r"evalsuite.sweep\(\) vary: .*pooling"):
        evalsuite.sweep(vary={"pooling": ["median"]})  # the call reaches evalsuite.api.sweep, checked before loading


def test_keywords_are_the_commands_options_checked_by_the_same_parsers() -> None:
    with pytest.raises(SpecError, match=r"unknown setting\(s\) pooling_mode; known: .*pooling"):
        evalsuite.evaluate(pooling_mode="cls")
    with pytest.raises(SpecError, match=r"max_length=1 \(the option --max-length\): 1 is too small"):
        evalsuite.evaluate(max_length=1)
    with pytest.raises(SpecError, match=r"pooling='median' \(the option --pooling\) is not one of cls, mean"):
        evalsuite.evaluate(pooling="median")
    with pytest.raises(SpecError, match=r"use_cache must be True or False"):
        evalsuite.evaluate(use_cache="no")
    with pytest.raises(SpecError, match=r"unknown setting\(s\) canary_min_cosine"):
        evalsuite.evaluate(canary_min_cosine=0.9)  # the canary's option, not the run's


def _recall_at(k: int, ranking, qrels) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """recall@k per query, counted by hand from the ranking (the oracle: no ranx)."""
    out = {}
    for qid, docs in ranking.items():
        relevant = {d for d, r in qrels.get(qid, {}).items() if r > 0}
        if relevant:
            out[qid] = len(relevant & set(list(docs)[:k])) / len(relevant)
    return out


def test_evaluate_returns_what_evalsuite_run_writes(tiny_model_dir, small_beir, tmp_path, capsys) -> None:
    settings = {"metrics": "ndcg@10,recall@5", "dim": 16, "device": "cpu", "use_cache": False}
    result = evalsuite.evaluate(tiny_model_dir, small_beir, out=tmp_path / "api", **settings)
    argv = ["run", "--model", str(tiny_model_dir), "--dataset", str(small_beir), "--out", str(tmp_path / "cli")]
    assert main([*argv, "--metrics", "ndcg@10,recall@5", "--dim", "16", "--device", "cpu", "--no-cache"]) == 0
    capsys.readouterr()
    assert result.to_json() == (tmp_path / "api" / "results.json").read_text(encoding="utf-8")
    assert sorted(result.paths) == ["manifest.json", "report.md", "results.json", "run.trec"]
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    api = result.to_dict()
    assert api["metrics"] == cli["metrics"] and api["per_query"] == cli["per_query"]
    assert api["manifest"]["contract"] == cli["manifest"]["contract"] and result.contract.dim == 16
    assert "fingerprint" in api["manifest"]  # the same manifest `evalsuite verify` reads
    by_hand = _recall_at(5, result.result.ranking, result.result.dataset.qrels)
    assert result.per_query["recall@5"] == pytest.approx(by_hand)
    assert result.metrics["recall@5"] == pytest.approx(float(np.mean(list(by_hand.values()))))


def test_evaluate_writes_nothing_without_out(tiny_model_dir, small_beir, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = evalsuite.evaluate(tiny_model_dir, small_beir, device="cpu", use_cache=False, metrics="ndcg@10")
    assert result.paths == {} and [p.name for p in tmp_path.iterdir()] == ["small"]  # the dataset only
    assert set(result.metrics) == {"ndcg@10"} and set(result.per_query["ndcg@10"]) == {"q1", "q2", "q3"}


def test_compare_is_the_paired_difference_over_the_shared_queries(tiny_model_dir, small_beir, make_beir, tmp_path):
    common = {"device": "cpu", "use_cache": False, "metrics": "ndcg@10,recall@5"}
    full = evalsuite.evaluate(tiny_model_dir, small_beir, **common)
    cut = evalsuite.evaluate(tiny_model_dir, small_beir, dim=4, **common)
    cmp = cut.compare(full)
    assert list(cmp) == ["ndcg@10", "recall@5"] and cmp.n_queries == 3
    assert dict(cmp.contract_diff) == {"dim": (4, 32)}
    for m in ("ndcg@10", "recall@5"):
        diffs = [cut.per_query[m][q] - full.per_query[m][q] for q in sorted(full.per_query[m])]  # by hand
        d = cmp[m]
        assert d.delta == pytest.approx(sum(diffs) / len(diffs))
        assert d.candidate - d.reference == pytest.approx(d.delta)
        assert d.ci[0] <= d.delta <= d.ci[1]
    same = full.compare(full, ["ndcg@10"])
    assert same["ndcg@10"].delta == 0.0 and same["ndcg@10"].ci == (0.0, 0.0) and same["ndcg@10"].p_value == 1.0
    assert json.loads(cmp.to_json())["metrics"]["recall@5"]["ci"]["delta"] == cmp["recall@5"].delta
    with pytest.raises(SpecError, match="not scored by both runs"):
        cut.compare(full, ["mrr@10"])
    other = make_beir(tmp_path / "other", *_other_records())
    with pytest.raises(ContractError, match="the runs are on different data"):
        evalsuite.evaluate(tiny_model_dir, other, **common).compare(full)


def _other_records():  # type: ignore[no-untyped-def]
    corpus = [{"_id": "a", "title": "", "text": "one"}, {"_id": "b", "title": "", "text": "two"}]
    return corpus, [{"_id": "q1", "text": "one"}], [("q1", "a", 1)]


def test_sweep_returns_what_evalsuite_sweep_writes(tiny_model_dir, small_beir, tmp_path) -> None:
    common = {"device": "cpu", "use_cache": False, "metrics": "ndcg@10"}
    report = evalsuite.sweep(tiny_model_dir, small_beir, vary={"dim": [16, 8]}, out=tmp_path, **common)
    assert sorted(report.paths) == ["report.html", "report.md", "sweep.json"]
    written = json.loads((tmp_path / "sweep.json").read_text())
    data = report.to_dict()
    written.pop("created"), data.pop("created")
    assert data == written
    assert list(report.cells) == ["dim=16", "dim=8"]
    alone = evalsuite.evaluate(tiny_model_dir, small_beir, dim=8, **common)  # the cell's contract, run on its own
    assert report.cells["dim=8"].result.per_query == alone.per_query
    assert report.base.metrics == evalsuite.evaluate(tiny_model_dir, small_beir, **common).metrics
