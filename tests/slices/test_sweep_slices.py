"""A sweep's slices: per-cell slice values in sweep.json against a hand computation from the cells' per-query
values, the slice that moved most in the terminal, the small multiples in report.html."""

import json

import numpy as np
import pytest


@pytest.fixture
def coded(make_beir, tmp_path):
    """Length-coded (see test_slice_gate_e2e): under max_length=24 only the long (finance) queries lose."""
    queries = [(n, ("sports", "music")[i % 2]) for i, n in enumerate(list(range(1, 21)) * 2)]
    queries += [(n, "finance") for n in range(30, 42)]
    docs = [{"_id": f"d{n:02d}", "title": "", "text": " ".join(["index"] * n)} for n in range(1, 61)]
    return make_beir(
        tmp_path / "coded",
        docs,
        [{"_id": f"q{j:03d}", "text": " ".join(["index"] * n), "topic": t} for j, (n, t) in enumerate(queries)],
        [(f"q{j:03d}", f"d{n:02d}", 1) for j, (n, _) in enumerate(queries)],
    ), queries


def test_sweep_reports_carry_the_slices(tiny_model_dir, coded, tmp_path, capsys, monkeypatch):
    from evalsuite.cli import main
    from evalsuite.sweep import execute

    dataset, queries = coded
    kept = {}
    real = execute.run_sweep

    def keep(*a, **k):
        kept["result"] = real(*a, **k)
        return kept["result"]

    monkeypatch.setattr(execute, "run_sweep", keep)
    monkeypatch.setattr("evalsuite.sweep.run_sweep", keep)
    out = tmp_path / "sw"
    assert (
        main(
            [
                "sweep",
                "--model",
                str(tiny_model_dir),
                "--dataset",
                str(dataset),
                "--no-cache",
                "--device",
                "cpu",
                "--vary",
                "max_length=24",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    data = json.loads((out / "sweep.json").read_text())
    cell = data["cells"][0]
    per_query = kept["result"].cells[0].result.per_query
    finance = [f"q{j:03d}" for j, (_, t) in enumerate(queries) if t == "finance"]
    row = next(s for s in cell["slices"] if s["slice"] == "topic=finance")
    assert row["n_queries"] == 12
    assert row["metrics"]["ndcg@10"] == pytest.approx(np.mean([per_query["ndcg@10"][q] for q in finance]), abs=2e-6)
    base_row = next(s for s in data["base"]["slices"] if s["slice"] == "topic=finance")
    assert base_row["metrics"]["ndcg@10"] == pytest.approx(1.0)
    assert base_row["ci_low"]["ndcg@10"] == base_row["ci_high"]["ndcg@10"] == 1.0  # every query scores 1
    for r in cell["slices"]:  # each cell row's interval is its own (the cell's finance queries all score 0)
        for m, v in r["metrics"].items():
            assert r["ci_low"][m] <= v <= r["ci_high"][m]
    assert row["ci_high"]["ndcg@10"] < base_row["ci_low"]["ndcg@10"]
    assert "slice that moved most per cell:" in printed
    line = printed.splitlines()[printed.splitlines().index("slice that moved most per cell:") + 1]
    assert line.startswith("  max_length=24: ") and "delta -1.0000" in line
    html = (out / "report.html").read_text()
    assert "Slices (ndcg@10)" in html and "one panel per slice" in html and "error bars: the 95%" in html
    md = (out / "report.md").read_text()
    assert "## Slices (ndcg@10)" in md and "| topic=finance | 12 | 1.0000 | 0.0000 |" in md
