"""`sweep --choose`: the cheapest cell non-inferior to the base, against an independent non-inferiority test (a
one-sided paired t-test at the Bonferroni-corrected level, scipy) on synthetic paired scores; and end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from evalsuite.base.errors import SpecError
from evalsuite.cli import main
from evalsuite.sweep.choose import Candidate, ChooseRule, choose, pareto_front, parse_choose

N = 400
MARGIN = 0.02


def _independent(base: np.ndarray, cells: list[Candidate], margin: float) -> str | None:
    """One-sided paired t-test of H0: mean(cell - base) <= -margin at alpha 0.05 / m; the cheapest rejection."""
    alpha = 0.05 / len(cells)
    passing = [
        c for c in cells if stats.ttest_1samp(c.scores - base + margin, 0.0, alternative="greater").pvalue < alpha
    ]
    return min(passing, key=lambda c: c.cost).name if passing else None  # type: ignore[arg-type, return-value]


def _cells(shifts: dict[str, tuple[float, float]], seed: int = 0) -> tuple[np.ndarray, list[Candidate]]:
    """Per cell (mean shift against the base, cost); per-query noise of 0.02 around a shared base."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.9, N)
    return base, [Candidate(n, base + s + rng.normal(0, 0.02, N), cost) for n, (s, cost) in shifts.items()]


def test_the_cheapest_non_inferior_cell_is_chosen() -> None:
    """Bugs caught: the most expensive instead of the cheapest passing cell; the margin's sign flipped (a cell losing
    twice the margin would pass); an inferior but cheaper cell chosen."""
    base, cells = _cells(
        {
            "dim=384,index=flat": (0.0, 1536.0),
            "dim=256": (-0.005, 1024.0),  # within the margin: passes
            "dim=128": (-0.01, 512.0),  # within the margin: passes, and cheaper
            "dim=64": (-0.04, 256.0),  # twice the margin: fails
            "index=binary": (-0.15, 48.0),  # cheapest of all, far worse: fails
        }
    )
    rule = ChooseRule("ndcg@10", MARGIN, "bytes")
    got = choose(rule, base, 1536.0, cells)
    assert got.chosen == _independent(base, cells, MARGIN) == "dim=128"
    decisions = {c.name: c.decision for c in got.cells}
    assert decisions["dim=64"] == decisions["index=binary"] == "fail"
    assert got.confidence == pytest.approx(1 - 0.05 / 5)
    assert got.sentence().startswith("ship dim=128: the cheapest cell non-inferior within 0.02 ndcg@10")
    # dim=384 costs what the base costs and is no better; each cheaper cell is worse than every dearer one
    assert [c.pareto for c in got.cells] == [False, True, True, True, True]


def test_none_qualifies_and_the_undecided_cells_say_how_many_queries_would_decide_them() -> None:
    base, cells = _cells({"dim=128": (-0.05, 512.0), "sq8": (-0.02, 384.0)}, seed=1)
    got = choose(ChooseRule("ndcg@10", MARGIN), base, 1536.0, cells)
    assert got.chosen is None and _independent(base, cells, MARGIN) is None
    sq8 = next(c for c in got.cells if c.name == "sq8")
    assert sq8.decision == "inconclusive" and (sq8.queries_needed is None or sq8.queries_needed > N)
    assert got.sentence().startswith("no cell is non-inferior") and "keep the base" in got.sentence()
    assert "inconclusive: sq8" in got.sentence()


def test_a_cell_without_its_cost_is_not_judged() -> None:
    base, cells = _cells({"a": (0.0, 10.0)})
    got = choose(ChooseRule("ndcg@10", MARGIN, "latency"), base, None, [*cells, Candidate("b", base, None)])
    assert got.chosen == "a" and got.confidence == pytest.approx(0.95)  # one cell considered
    assert next(c for c in got.cells if c.name == "b").decision is None


def test_pareto_front_against_a_brute_force_definition() -> None:
    rng = np.random.default_rng(4)
    pts = [(float(c), float(q)) for c, q in zip(rng.integers(1, 6, 30), rng.integers(0, 5, 30), strict=True)]
    want = [all(not (c2 <= c and q2 >= q and (c2, q2) != (c, q)) for c2, q2 in pts) for c, q in pts]
    assert pareto_front(pts) == want  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["ndcg@10:max_drop=0.01", "ndcg@10:non_inferior=-0.01", "ndcg@10"])
def test_a_bad_rule_is_a_spec_error(text: str) -> None:
    with pytest.raises(SpecError, match="--choose"):
        parse_choose(text)


def test_sweep_choose_names_a_cell_in_the_table_the_json_and_the_html(
    tiny_model_dir: Path, minibeir_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "sweep", "--model", str(tiny_model_dir), "--dataset", str(minibeir_dir), "--device", "cpu",
            "--cache-dir", str(tmp_path / "cache"), "--metrics", "ndcg@10",
            "--vary", "dim=32,16", "--vary", "index=flat,sq8", "--grid",
            "--choose", "ndcg@10:non_inferior=0.5", "--cost", "bytes", "--out", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    data = json.loads((out / "sweep.json").read_text())
    choice = data["choice"]
    judged = [c for c in choice["cells"] if c["decision"] == "pass"]
    cheapest = min(judged, key=lambda c: (c["cost"], -c["value"]))
    assert choice["chosen"] == cheapest["name"] and choice["cost"] == "bytes"
    assert f"choice: ship {cheapest['name']}" in printed
    assert cheapest["cost"] == min(c["cost"] for c in choice["cells"])  # a margin of 0.5 lets the cheapest through
    html = (out / "report.html").read_text()
    assert "<h2>Choice</h2>" in html and f"{cheapest['name']} (chosen)" in html
    assert f"**{choice['sentence']}**" in (out / "report.md").read_text()
