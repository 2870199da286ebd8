"""``evalsuite.budget()``: the `evalsuite budget` job as a call, returning what the command writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalsuite
from evalsuite.base.errors import BudgetStageError

pytestmark = pytest.mark.integration


def test_the_front_door_returns_the_budget_the_command_writes(tmp_path: Path, reference_cache: Path) -> None:
    report = evalsuite.budget(
        dim=128,
        metrics="ndcg@10",
        cache_dir=str(reference_cache),
        budget_gates=["ndcg@10[stage=dimension]:max_drop=0.001"],
    )
    assert report.paths == {} and report.exit_status == 1  # the cut loses more than 0.001: the gate fails
    assert report.sentence.startswith("Production loses") and "the cut to 128 dimensions" in report.sentence
    written = report.write(tmp_path / "out")
    data = json.loads(written.paths["json"].read_text())
    assert data == json.loads(json.dumps(report.to_json())) and [g["verdict"] for g in data["gates"]] == ["fail"]


def test_a_stage_that_cannot_be_built_raises_its_typed_error(tmp_path: Path) -> None:
    with pytest.raises(BudgetStageError, match="budget stage 'dimension'"):
        evalsuite.budget(dim=1000, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()
