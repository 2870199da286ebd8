"""`pytest --model-rev REV --budget --budget-gate EXPR`: the budget as pytest items, one per stage gate."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalsuite.model import bundled_model_dir, directory_digest

pytestmark = pytest.mark.integration


def test_stage_gates_are_items_and_the_reports_are_written(
    pytester: pytest.Pytester, reference_cache: Path, bundled_model_loaded: None
) -> None:
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(
        "-p", "no:randomly", "-p", "no:cacheprovider",
        "--model-rev", directory_digest(bundled_model_dir()),
        "--cache-dir", str(reference_cache), "--reports-dir", str(pytester.path / "reports"),
        "--dim", "128", "--index", "hnsw:M=8,ef=4", "--metrics", "ndcg@10,recall@10",
        "--budget",
        "--budget-gate", "ndcg@10[stage=dimension]:non_inferior=0.2",
        "--budget-gate", "ndcg@10[stage=ann]:max_drop=0.001",
        f"--junitxml={junit}", "-k", "budget",
    )  # fmt: skip
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 2 and outcomes.get("failed") == 1, outcomes
    result.stdout.fnmatch_lines(
        ["*budget?ndcg@10?stage=ann?:max_drop=0.001?*", "*before ann*after ann*allowed drop 0.001*"]
    )
    props = {
        p.get("name"): p.get("value")
        for case in ET.parse(junit).getroot().iter("testcase")
        for p in case.iter("property")
    }
    assert props["budget"].startswith("Production loses")
    assert props["budget:ndcg@10[stage=ann]:max_drop=0.001"] == "fail"
    data = json.loads((pytester.path / "reports" / "minibeir" / "budget" / "budget.json").read_text())
    assert [g["verdict"] for g in data["gates"]] == ["pass", "fail"]
    assert data["sentence"] == props["budget"]


def test_a_budget_option_without_budget_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:randomly", "--budget-gate", "ndcg@10[stage=ann]:max_drop=0.01")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--budget-gate need(s) --budget*"])
