"""The budget's `reranker` stage: the first stage's top N reordered by the local cross-encoder, charged against the
first stage, with the scores `evalsuite run --reranker` computes for the same two stages (the rerank pipeline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.cli import main


def test_the_reranker_stage_is_what_the_two_stage_run_scores(
    tiny_model_dir: Path, cross_encoder_dir: Path, minibeir_dir: Path, tmp_path: Path
) -> None:
    common = ["--model", str(tiny_model_dir), "--dataset", str(minibeir_dir), "--device", "cpu"]
    common += ["--cache-dir", str(tmp_path / "cache"), "--metrics", "ndcg@10,recall@10"]
    common += ["--reranker", str(cross_encoder_dir), "--rerank-depth", "5"]
    assert main(["budget", *common, "--dim", "16", "--out", str(tmp_path / "budget")]) == 0
    data = json.loads((tmp_path / "budget" / "budget.json").read_text())
    stage = next(s for s in data["stages"] if s["name"] == "reranker")
    assert stage["skipped"] is None and stage["config"]["reranker"] and stage["cost"]["rerank_depth"] == 5
    dimension = next(s for s in data["stages"] if s["name"] == "dimension")
    assert main(["run", *common, "--dim", "16", "--out", str(tmp_path / "run")]) == 0
    run = json.loads((tmp_path / "run" / "results.json").read_text())
    (reranked,) = run["reranked"]
    for metric in ("ndcg@10", "recall@10"):
        assert dimension["metrics"][metric] == pytest.approx(run["metrics"][metric], abs=1e-6)
        assert stage["metrics"][metric] == pytest.approx(reranked["metrics"][metric], abs=1e-6)
        gain = reranked["metrics"][metric] - run["metrics"][metric]
        assert stage["delta"][metric]["value"] == pytest.approx(gain, abs=1e-6)
    assert "the reranker over the top 5" in data["sentence"]


def test_a_reranker_that_cannot_be_found_is_a_typed_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["budget", "--reranker", str(tmp_path / "missing"), "--out", str(tmp_path / "out")])
    assert code == 2 and "budget stage 'reranker'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
