"""Per-slice small multiples of several runs: values per slice and run, one panel per slice."""

import pytest

from evalsuite.reports.slice_plots import slice_small_multiples, slice_values
from evalsuite.slicing import QueryProfile, SliceIndex


def _index():
    topics = ["a", "a", "b", "b", "b"]
    return SliceIndex(
        64, {f"q{i}": QueryProfile(5 + 40 * i, 10, {"topic": t}) for i, t in enumerate(topics)}, ("topic",)
    )


def test_values_per_slice_and_run():
    base = {"ndcg@10": {"q0": 1.0, "q1": 0.5, "q2": 0.0, "q3": 0.3, "q4": 0.6}}
    cell = {"ndcg@10": {"q0": 0.0, "q1": 0.5, "q2": 0.3, "q3": 0.3, "q4": 0.6}}
    values = {
        p.slice: (p.n_queries, p.values) for p in slice_values(_index(), [("base", base), ("cell", cell)], "ndcg@10")
    }
    assert values["topic=a"][0] == 2 and values["topic=a"][1] == pytest.approx([0.75, 0.25])
    assert values["topic=b"][1] == pytest.approx([0.3, 0.4])
    assert values["qlen<=32"] == (1, pytest.approx([1.0, 0.0]))  # q0 has 5 tokens
    assert set(values) == {
        "qlen<=32",
        "qlen=33..128",
        "qlen=129..256",
        "qlen=truncated",
        "doclen<=32",
        "topic=a",
        "topic=b",
    }
    assert values["qlen=truncated"][0] == 3  # 85, 125 and 165 tokens, over 64


def test_one_panel_per_slice():
    pq = {"ndcg@10": {f"q{i}": 0.5 for i in range(5)}}
    fig = slice_small_multiples(_index(), [("base", pq), ("x", pq), ("y", pq)], "ndcg@10")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 7 and {ax.get_title() for ax in visible} >= {"topic=a (2 q)", "topic=b (3 q)"}
    assert len(visible[0].patches) == 3
    assert slice_small_multiples(_index(), [("base", pq)], "ndcg@10") is None
