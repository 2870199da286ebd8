"""A two-stage run's files: results.json with both stages (the first stage where every run puts it, each depth under
``reranked``), and report.html: written beside the JSON and Markdown, self-contained, every metric and depth named,
the gain's CI drawn as error bars, hostile names escaped."""

from __future__ import annotations

import base64
import dataclasses
import re

import numpy as np
import pytest

from evalsuite.rerank.contract import RerankerContract
from evalsuite.rerank.twostage import evaluate_depths

HOSTILE = "/models/<script>alert(1)</script>&co"
PNG = b"\x89PNG\r\n\x1a\n"
METRICS = ["ndcg@10", "mrr@10", "recall@3"]


@pytest.fixture(scope="module")
def results(tiny_model_dir, tmp_path_factory, make_beir, small_beir_records):
    from evalsuite.run.pipeline import run
    from evalsuite.run.spec import RunSpec

    corpus, queries, qrels = small_beir_records
    data = make_beir(tmp_path_factory.mktemp("rr-html"), corpus, queries, qrels)
    first = run(RunSpec(model=str(tiny_model_dir), dataset=str(data), device="cpu", use_cache=False, metrics=METRICS))
    first = dataclasses.replace(first, contract=first.contract.replace(model=HOSTILE + "-embedder"))
    ds = first.dataset
    judged = {(ds.queries[q], ds.corpus[d]): float(r) for q, docs in ds.qrels.items() for d, r in docs.items()}
    contract = RerankerContract(
        model=HOSTILE,
        model_revision="r" * 40,
        tokenizer_revision="t" * 40,
        activation="none",
        template="pair",
        max_length=64,
    )
    scorer = lambda pairs, labels: np.array([judged.get(p, 0.0) for p in pairs])  # noqa: E731
    return evaluate_depths(first, contract, scorer, [2, 6], METRICS)


def test_report_html_is_written_self_contained_and_escaped(results, tmp_path):
    from evalsuite.rerank.reports import write_two_stage_reports

    paths = write_two_stage_reports(results, tmp_path)
    assert paths["report.html"] == tmp_path / "report.html"
    assert {"results.json", "report.md"} <= set(paths)
    html = paths["report.html"].read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;&amp;co" in html
    assert not re.search(r'(src|href)="(https?:)?//', html) and "@import" not in html
    for metric in METRICS:
        assert html.count(f"<td>{metric}</td>") == 2  # one row per depth
    for depth in (2, 6):
        assert f"<h2>Rerank depth {depth}</h2>" in html
    pngs = [base64.b64decode(m) for m in re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)]
    assert len(pngs) == 2 and all(p.startswith(PNG) and len(p) > 5_000 for p in pngs)
    gain = results[1].gain("ndcg@10")
    assert f"<td>{gain.delta:+.4f}</td>" in html and f"[{gain.low:+.4f}, {gain.high:+.4f}]" in html


def test_the_gain_plot_draws_each_ci_as_error_bars_around_the_gain():
    from matplotlib.container import BarContainer

    from evalsuite.reports.html import delta_chart

    fig = delta_chart(
        "gain",
        ["ndcg@10"],
        ["depth 10", "depth 50"],
        {"depth 10": {"ndcg@10": -0.02}, "depth 50": {"ndcg@10": 0.05}},
        {"depth 10": {"ndcg@10": (-0.05, 0.01)}, "depth 50": {"ndcg@10": (0.02, 0.08)}},
    )
    (bars,) = [c for c in fig.axes[0].containers if isinstance(c, BarContainer)]
    assert [round(b.get_height(), 6) for b in bars] == [-0.02, 0.05]  # a loss is drawn below zero
    segments = bars.errorbar.lines[2][0].get_segments()
    assert [(round(s[0][1], 6), round(s[1][1], 6)) for s in segments] == [(-0.05, 0.01), (0.02, 0.08)]
    low, high = fig.axes[0].get_ylim()
    assert low < -0.05 and high > 0.08


def test_the_stages_plot_centres_the_gain_ci_on_the_first_stage(results):
    from evalsuite.rerank.reports import _bands

    r = results[1]
    for d in r.deltas:
        if d.low is not None:
            low, high = _bands(r, around="first")[d.metric]
            assert (low, high) == pytest.approx((d.first + d.low, d.first + d.high))
            assert _bands(r, around="zero")[d.metric] == pytest.approx((d.low, d.high))


def test_results_json_holds_the_first_stage_at_the_top_and_every_depth_reranked(results, tmp_path):
    """Bugs caught: the first stage under its own key or directory (not where a one-stage run puts it), a depth
    missing, a depth's entry holding the first stage's metrics, the gain not reranked - first."""
    import json

    from evalsuite.rerank.reports import write_two_stage_reports
    from evalsuite.run.result import SCHEMA_VERSION, read_results

    paths = write_two_stage_reports(results, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "first_stage.trec",
        "manifest.json",
        "report.html",
        "report.md",
        "results.json",
        "run.trec",
    ]
    data = read_results(paths["results.json"])
    first = results[0].first
    one_stage = json.loads(json.dumps(first.to_dict()))
    assert {k: v for k, v in data.items() if k != "reranked"} == one_stage  # the first stage: a run's results.json
    assert data["schema_version"] == SCHEMA_VERSION == 2
    assert [d["depth"] for d in data["reranked"]] == [2, 6]
    for entry, r in zip(data["reranked"], results, strict=True):
        assert entry["reranker"] == r.contract.to_dict()
        assert entry["metrics"] == {m: round(v, 6) for m, v in r.metrics.items()}
        assert entry["metrics"] != data["metrics"]
        for g in entry["gain"]:
            assert g["delta"] == pytest.approx(entry["metrics"][g["metric"]] - data["metrics"][g["metric"]], abs=2e-6)
            assert g["low"] <= g["delta"] <= g["high"]


def test_an_old_results_json_is_a_clear_error(tmp_path):
    """A version-1 file (a two-stage run then wrote rerank.json beside it) is named with what to do."""
    from evalsuite.base.errors import SpecError
    from evalsuite.run.result import read_results

    old = tmp_path / "results.json"
    old.write_text('{"schema_version": 1, "metrics": {}}')
    with pytest.raises(
        SpecError,
        match=r"results.json schema_version 1, expected 2 \(an older evalsuite; its "
        r"two-stage runs wrote rerank.json .*rerun the command",
    ):
        read_results(old)
    old.write_text('{"schema_version": 3}')
    with pytest.raises(SpecError, match=r"schema_version 3, expected 2; rerun"):
        read_results(old)
    old.write_text("{")
    with pytest.raises(SpecError, match=r"results.json:1: results.json is not valid JSON"):
        read_results(old)
