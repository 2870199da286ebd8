"""The budget's `hybrid` stage: the production retriever (issue 38's) over each configuration's dense ranking,
charged as a gain against the dense stage before it, with the scores `evalsuite run --retrieval` computes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.cli import main

pytestmark = pytest.mark.integration


def test_the_hybrid_stage_is_what_the_run_scores_for_the_same_retriever(tmp_path: Path, reference_cache: Path) -> None:
    common = ["--cache-dir", str(reference_cache), "--metrics", "ndcg@10,recall@10"]
    common += ["--retrieval", "hybrid", "--fusion", "wsum", "--fusion-weights", "0.8,0.2"]
    assert main(["budget", *common, "--out", str(tmp_path / "budget")]) == 0
    data = json.loads((tmp_path / "budget" / "budget.json").read_text())
    hybrid = next(s for s in data["stages"] if s["name"] == "hybrid")
    assert hybrid["skipped"] is None and hybrid["config"]["hybrid"]
    assert main(["run", *common, "--out", str(tmp_path / "run")]) == 0
    run = json.loads((tmp_path / "run" / "results.json").read_text())
    for metric in ("ndcg@10", "recall@10"):
        assert hybrid["metrics"][metric] == pytest.approx(run["metrics"][metric], abs=1e-6)
        gain = run["metrics"][metric] - data["reference"]["metrics"][metric]
        assert hybrid["delta"][metric]["value"] == pytest.approx(gain, abs=1e-6)
    assert "from hybrid fusion (wsum of dense+bm25)" in data["sentence"]
    assert data["reference"]["contract"].get("retrieval", "dense") == "dense"
