"""Each slice mean's 95% interval (percentile bootstrap over the slice's per-query values): against numpy by
hand, per run in a table of several runs, in results.json / sweep.json rows, and as error bars in the panels.

Bugs each test catches are named in its docstring (applied by hand, seen failing, reverted)."""

import math

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from evalsuite.reports.slice_plots import error_extents, slice_small_multiples, slice_values, small_multiples_data
from evalsuite.scoring import stats
from evalsuite.slicing import MIN_INTERVAL, QueryProfile, SliceIndex


def _index(topics: list[str]) -> SliceIndex:
    return SliceIndex(64, {f"q{i}": QueryProfile(5, 10, {"topic": t}) for i, t in enumerate(topics)}, ("topic",))


def by_hand(v: list[float], n_resamples: int = stats.N_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """2.5% and 97.5% quantiles of the means of the documented resamples (blocks of _BLOCK rows of n draws)."""
    x, n = np.asarray(v, dtype=np.float64), len(v)
    rng = np.random.default_rng(seed)
    blocks = [
        rng.integers(0, n, size=(min(stats._BLOCK, n_resamples - s), n), dtype=np.uint32)
        for s in range(0, n_resamples, stats._BLOCK)
    ]
    means = np.array([x[row].sum() / n for block in blocks for row in block])
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def _scores(rng: np.random.Generator, topics: list[str]) -> dict[str, dict[str, float]]:
    return {"ndcg@10": {f"q{i}": float(rng.random() ** 2) for i in range(len(topics))}}


def test_interval_is_the_bootstrap_of_the_slice_values_and_contains_the_mean():
    """Bugs: a resample's sum over n - 1, low/high swapped, the interval over the whole run instead of the slice."""
    topics = ["a"] * 14 + ["b"] * 31
    pq = _scores(np.random.default_rng(3), topics)
    rows = {r.slice: r for r in _index(topics).table(pq, intervals=True)}
    for topic, qids in (("a", range(14)), ("b", range(14, 45))):
        values = [pq["ndcg@10"][f"q{i}"] for i in qids]
        row = rows[f"topic={topic}"]
        low, high = row.intervals["ndcg@10"]
        assert (low, high) == pytest.approx(by_hand(values), abs=1e-12)
        assert row.metrics["ndcg@10"] == pytest.approx(np.mean(values))
        assert low < row.metrics["ndcg@10"] < high
        d = row.to_dict()
        assert d["ci_low"] == {"ndcg@10": round(low, 6)} and d["ci_high"] == {"ndcg@10": round(high, 6)}
    assert _index(topics).table(pq)[0].intervals == {}  # not asked for: no bootstrap


def test_interval_narrows_with_more_queries():
    """Bug: an interval that ignores the number of queries (e.g. quantiles of the values, not of their means)."""
    rng = np.random.default_rng(8)
    widths = []
    for n in (10, 40, 160):
        topics = ["a"] * n
        (row,) = [r for r in _index(topics).table(_scores(rng, topics), intervals=True) if r.slice == "topic=a"]
        low, high = row.intervals["ndcg@10"]
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2] > 0
    assert widths[0] / widths[2] == pytest.approx(4.0, rel=0.35)  # about sqrt(160 / 10)


def test_one_distinct_value_has_zero_width_and_one_query_has_no_interval():
    """Bugs: a floor of width added to every interval; an interval made up for a single query."""
    topics = ["a"] * 12 + ["b"]
    pq = {"ndcg@10": {f"q{i}": 0.3 for i in range(12)} | {"q12": 0.9}}
    rows = {r.slice: r for r in _index(topics).table(pq, intervals=True)}
    low, high = rows["topic=a"].intervals["ndcg@10"]
    assert low == pytest.approx(0.3, abs=1e-12) and high == pytest.approx(0.3, abs=1e-12)
    assert rows["topic=a"].to_dict()["ci_low"] == rows["topic=a"].to_dict()["ci_high"] == {"ndcg@10": 0.3}
    assert MIN_INTERVAL == 2 and rows["topic=b"].n_queries == 1 and rows["topic=b"].intervals == {}
    assert "ci_low" not in rows["topic=b"].to_dict()


def test_each_run_gets_its_own_interval():
    """Bugs: the base's interval drawn for every run (in SliceIndex.tables or in the panels)."""
    topics = ["a"] * 20 + ["b"] * 25
    rng = np.random.default_rng(1)
    base = _scores(rng, topics)
    cell = {"ndcg@10": {q: v * 0.5 for q, v in base["ndcg@10"].items()}}
    runs = [("base", base), ("cell", cell)]
    index = _index(topics)
    for together, alone in zip(index.tables([base, cell], intervals=True), (base, cell), strict=True):
        for row, own in zip(together, index.table(alone, intervals=True), strict=True):  # up to BLAS rounding
            assert row.metrics == own.metrics and row.intervals["ndcg@10"] == pytest.approx(own.intervals["ndcg@10"])
    panels = {p.slice: p for p in slice_values(index, runs, "ndcg@10")}
    for topic, qids in (("a", range(20)), ("b", range(20, 45))):
        p = panels[f"topic={topic}"]
        for j, (_, pq) in enumerate(runs):
            values = [pq["ndcg@10"][f"q{i}"] for i in qids]
            assert p.values[j] == pytest.approx(np.mean(values))
            assert (p.low[j], p.high[j]) == pytest.approx(by_hand(values), abs=1e-12)
    assert p.high[1] < p.high[0]  # the halved cell's interval is its own


def test_results_json_rows_carry_the_interval():
    topics = ["a"] * 10
    pq = _scores(np.random.default_rng(4), topics)
    data = _index(topics).to_dict(pq)
    row = next(r for r in data["slices"] if r["slice"] == "topic=a")
    assert (row["ci_low"]["ndcg@10"], row["ci_high"]["ndcg@10"]) == pytest.approx(
        by_hand(list(pq["ndcg@10"].values())), abs=1e-6
    )
    assert "percentile bootstrap" in data["ci"]


def _segments(container: ErrorbarContainer) -> list[tuple[float, float] | None]:
    """Each error bar's (bottom, top); None for a bar matplotlib left out (NaN extents)."""
    (bars,) = container.lines[2]
    return [(float(s[0][1]), float(s[1][1])) if len(s) else None for s in bars.get_segments()]


def test_every_panel_has_one_error_bar_per_run_from_low_to_high():
    """Bugs: no error bars; below/above extents swapped; an interval from the wrong run; a run with one query
    drawn as certain (zero-width bar) instead of without a bar."""
    topics = ["a"] * 15 + ["b"] * 30 + ["c"]
    rng = np.random.default_rng(6)
    runs = [("base", _scores(rng, topics)), ("x", _scores(rng, topics)), ("y", _scores(rng, topics))]
    index = _index(topics)
    panels, names, _ = small_multiples_data(index, runs, "ndcg@10")
    fig = slice_small_multiples(index, runs, "ndcg@10")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == len(panels) and names == ["base", "x", "y"]
    for ax, p in zip(visible, panels, strict=True):
        (container,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        segments = _segments(container)
        assert len(segments) == 3  # one per run
        assert segments == [
            None if lo is None else pytest.approx((lo, hi), abs=1e-12) for lo, hi in zip(p.low, p.high, strict=True)
        ]
    lone = next(p for p in panels if p.slice == "topic=c")
    assert lone.low == (None, None, None) and all(math.isnan(x) for x in error_extents(lone)[0])
