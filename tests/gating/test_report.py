"""The session report from ledger records alone (no model): summary rows, verdicts, terminal lines."""

from pathlib import Path

import pytest

from evalsuite.gating.gates import Gate, Outcome
from evalsuite.gating.ledger import CandidateSeen, Computation, GateRecord, ReferenceSeen, SweepCellRecord
from evalsuite.gating.report import SessionReport, dataset_report, summary_rows


def _outcome(expr: str, metric: str, passed: bool, value: float) -> Outcome:
    return Outcome(Gate(metric, "max_drop", 0.01, expr), "pass" if passed else "fail", value, 0.5, value - 0.5)


def test_summary_verdicts_come_from_gate_items_only():
    cand = CandidateSeen("d", {"ndcg@10": 0.48, "mrr@10": 0.6, "recall@10": 0.9})
    ref = ReferenceSeen("d", "reference", "reference 0123456789ab", {"ndcg@10": 0.5, "mrr@10": 0.6})
    gates = [
        GateRecord("d", "gate[a]", _outcome("ndcg@10:max_drop=0.01", "ndcg@10", False, 0.48)),
        GateRecord("d", "gate[b]", _outcome("mrr@10:max_drop=0.01", "mrr@10", True, 0.6)),
    ]
    rows = {r.metric: r for r in summary_rows(cand, ref, gates)}
    assert rows["ndcg@10"].verdict == "fail" and rows["ndcg@10"].delta == pytest.approx(-0.02)
    assert rows["mrr@10"].verdict == "pass"
    assert rows["recall@10"].verdict is None and rows["recall@10"].reference is None
    assert rows["ndcg@10"].cells() == ("ndcg@10", "0.5000", "0.4800", "-0.0200", "-", "-", "FAIL")


def test_sweep_cell_outcomes_do_not_decide_the_dataset_verdict(tmp_path):
    cand = CandidateSeen("d", {"ndcg@10": 0.5})
    cell = SweepCellRecord("d", "sweep[dim=16]", "dim=16", _outcome("ndcg@10:max_drop=0.01", "ndcg@10", False, 0.1))
    gate = GateRecord("d", "gate[x]", _outcome("ndcg@10:max_drop=0.01", "ndcg@10", True, 0.5))
    report = dataset_report("d", tmp_path, None, None, cand, None, [cell, gate], ())
    assert [r.verdict for r in report.rows] == ["pass"]
    assert report.side == "baseline" and report.results is None  # no result: no files
    assert report.write() == []


def test_terminal_lines():
    report = SessionReport(
        notes=("d: a note",),
        canary=(),
        computations=(Computation("candidate", "d", "gw0"),),
        baselines_written=(),
        datasets=(dataset_report("d", Path("r/d"), None, None, CandidateSeen("d", {"ndcg@10": 0.5}), None, [], ()),),
        reports_dir=Path("r"),
    )
    lines = report.terminal_lines(verbose=True)
    assert [x for x in report.terminal_lines(verbose=False) if x.startswith("computed ")] == []
    assert lines[0] == "d: a note" and lines[-1] == "reports: r"
    assert "computed candidate-d in gw0" in lines and "d:" in lines
    assert any(line.split() == ["ndcg@10", "-", "0.5000", "-", "-", "-", "-"] for line in lines)


def test_report_md_leads_with_the_verdict_and_what_did_not_pass():
    from evalsuite.gating.report import verdict_markdown

    ok = GateRecord("d", "gate[b]", _outcome("mrr@10:max_drop=0.01", "mrr@10", True, 0.6))
    bad = GateRecord("d", "gate[a]", _outcome("ndcg@10:max_drop=0.01", "ndcg@10", False, 0.48))
    cell = SweepCellRecord("d", "sweep[dim=16]", "dim=16", _outcome("ndcg@10:max_drop=0.01", "ndcg@10", False, 0.1))
    text = verdict_markdown("d", [ok, bad, cell])
    assert text.startswith("# evalsuite gates on d: FAIL\n\n3 gate outcome(s): 1 PASS, 2 FAIL.\n")
    assert "- `gate[a]`: FAIL" in text and "- `sweep[dim=16]`: FAIL" in text and "gate[b]" not in text
    assert verdict_markdown("d", [ok]).startswith("# evalsuite gates on d: PASS\n\n1 gate outcome(s): 1 PASS.\n")
    assert verdict_markdown("d", []) == "# evalsuite gates on d: nothing gated\n\n"
