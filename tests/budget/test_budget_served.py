"""The budget's `served` stage against a real Infinity server: the bundled model served faithfully costs nothing
measurable; a copy served with CLS pooling loses, and the loss is named as a vector-agreement fault, not noise.
Its scores equal those of `evalsuite run --endpoint` on the same server (the run's own pipeline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("infinity")]

KEY_ENV = "EVALSUITE_INFINITY_TEST_KEY"


def test_a_faithful_engine_costs_nothing_and_a_broken_one_is_named(
    infinity_servers, minibeir_dir: Path, tmp_path: Path, reference_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, infinity_servers["key"])
    common = ["--cache-dir", str(reference_cache), "--metrics", "ndcg@10,recall@10"]
    good = ["--endpoint", infinity_servers["good"].url, "--api-key-env", KEY_ENV]
    assert main(["budget", *good, *common, "--out", str(tmp_path / "good")]) == 0
    data = json.loads((tmp_path / "good" / "budget.json").read_text())
    served = next(s for s in data["stages"] if s["name"] == "served")
    assert served["skipped"] is None
    d = served["delta"]["ndcg@10"]
    assert d["low"] <= 0 <= d["high"] and abs(d["value"]) <= 0.005
    assert any("every vector passes the canary's vector agreement" in n for n in data["notes"])
    assert main(["run", *good, *common, "--out", str(tmp_path / "run")]) == 0
    run = json.loads((tmp_path / "run" / "results.json").read_text())
    for metric in ("ndcg@10", "recall@10"):
        assert served["metrics"][metric] == pytest.approx(run["metrics"][metric], abs=1e-6)

    assert main(["budget", "--endpoint", infinity_servers["cls"].url, *common, "--out", str(tmp_path / "cls")]) == 0
    data = json.loads((tmp_path / "cls" / "budget.json").read_text())
    served = next(s for s in data["stages"] if s["name"] == "served")
    assert served["delta"]["ndcg@10"]["high"] < 0
    (note,) = [n for n in data["notes"] if "below the canary's vector agreement threshold 0.99" in n]
    assert "not noise" in note and "the canary's diagnosis: " in note and "pools with CLS" in note
    assert "fix first: the served engine" in data["sentence"]
    assert infinity_servers["key"] not in json.dumps(data)
