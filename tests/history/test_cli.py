"""`evalsuite history` and the summary writer on synthetic records (no model): the table, the page, the exit
codes, and a session that judged nothing adds nothing to $GITHUB_STEP_SUMMARY."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from evalsuite.cli import main
from evalsuite.history.record import GateVerdict
from evalsuite.history.store import HistoryStore
from evalsuite.history.summary import SummaryGate, summary_markdown, write_summary

from .conftest import record


def _history(root: Path) -> HistoryStore:
    store = HistoryStore(root)
    fail = GateVerdict("ndcg@10:max_drop_from_first=0.02", "max_drop_from_first", "ndcg@10", 0.02, "fail", 0.8, -0.03)
    store.put(dataclasses.replace(record("a" * 40, [0.8, 0.8], when="2026-01-01T00:00:00Z"), source="/art/e-v1"))
    store.put(record("b" * 40, [0.77, 0.77], when="2026-01-02T00:00:00Z", gates=(fail,)))
    store.put(record("c" * 40, [0.5], when="2026-01-03T00:00:00Z", dataset="other"))
    return store


def test_the_table_and_page_per_model_and_dataset(tmp_path: Path, capsys):
    _history(tmp_path / "history")
    html = tmp_path / "page.html"
    assert main(["history", str(tmp_path / "history"), "--dataset", "minibeir", "--html", str(html)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "minilm on minibeir: 2 release(s)"
    assert out[1].split()[:4] == ["#", "revision", "source", "date"]
    assert out[2].split()[:6] == ["1", "a" * 12, "/art/e-v1", "2026-01-01", "00:00", "-"]
    assert out[3].split()[:3] == ["2", "b" * 12, "-"]  # a record written before sources were recorded
    assert "0.8000 (0.7900 .. 0.8100)" in out[2] and out[2].split()[-2:] == ["-", "-"]
    assert out[3].split()[-3:] == ["FAIL", "ndcg@10:max_drop_from_first=0.02", "FAIL"]
    assert not [line for line in out if "other" in line]
    page = html.read_text()
    assert page.count("data:image/png;base64,") == 1 and "<td>bbbbbbbbbbbb</td>" in page


def test_a_missing_directory_or_none_configured_is_a_usage_error(tmp_path: Path, capsys, monkeypatch):
    assert main(["history", str(tmp_path / "nope")]) == 2
    assert f"history directory {tmp_path / 'nope'} does not exist" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)
    assert main(["history"]) == 2
    assert 'pass DIR or set history = "DIR" in evalsuite.toml' in capsys.readouterr().err


def test_a_corrupt_record_is_named_with_exit_2(tmp_path: Path, capsys):
    store = _history(tmp_path / "h")
    bad = store.path_of("minilm", "minibeir", "a" * 40)
    bad.write_text("[]")
    assert main(["history", str(tmp_path / "h")]) == 2
    assert f"{bad}: not a JSON object" in capsys.readouterr().err


def test_an_ungated_session_adds_nothing_to_the_step_summary(tmp_path: Path, monkeypatch):
    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    empty = summary_markdown([], reports_dir=tmp_path, history_dir=None)
    assert empty.startswith("### evalsuite: nothing gated")
    assert write_summary(empty, tmp_path / "s.md", step_summary=False) == [tmp_path / "s.md"]
    assert not step.exists()
    gate = SummaryGate(
        "d", "ndcg@10:max_drop=0.01", "inconclusive", "baseline", -0.002, -0.01, 0.006, (("q1", 1.0, 0.5),)
    )
    text = summary_markdown([gate], reports_dir=None, history_dir=None)
    assert (
        "| d | `ndcg@10:max_drop=0.01` | **INCONCLUSIVE** | baseline | -0.0020 (-0.0100 .. +0.0060) | `q1` 1.000→0.500 |"
        in text
    )
    write_summary(text, None)
    assert step.read_text() == text + "\n"
