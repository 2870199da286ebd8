"""What `evalsuite history` draws dashed for a gate — the lowest value of its metric that passed it on a release — is
the gate kind's own (``GateKind.pass_line``), recorded with the release; the plot reads the record, never a kind's
name. A record written before records carried the line reads as it was drawn then."""

from __future__ import annotations

import json

import pytest

from evalsuite.gating.gates import GateKind
from evalsuite.gating.kinds import GATE_KINDS
from evalsuite.history.plot import thresholds
from evalsuite.history.record import GateVerdict, read_record
from evalsuite.history.store import HistoryStore

from .conftest import record

THRESHOLD, REFERENCE = 0.1, 0.8
# the line of each built-in kind, computed here from what each kind's gate asks (floor: at least the threshold;
# a drop: at most the threshold below the reference; a relative drop: at most that share of the reference)
EXPECTED = {
    "floor": THRESHOLD,
    "max_drop": REFERENCE - THRESHOLD,
    "max_drop_from_first": REFERENCE - THRESHOLD,
    "max_drop_from_best": REFERENCE - THRESHOLD,
    "max_rel_drop": REFERENCE * (1 - THRESHOLD),
}


def test_each_kind_declares_its_own_pass_line():
    for kind in GATE_KINDS:
        line = kind.pass_line(THRESHOLD, REFERENCE)
        assert line == pytest.approx(EXPECTED[kind.name]) if kind.name in EXPECTED else line is None, kind.name
        if kind.name != "floor":  # without a reference there is no line, but a floor's is its threshold
            assert kind.pass_line(THRESHOLD, None) is None, kind.name
    assert {k.name for k in GATE_KINDS} >= set(EXPECTED)


class AtLeast(GateKind):
    """A kind declared beside the built-in ones (as a plug-in's is): its line is its own."""

    name = "at_least"

    def pass_line(self, threshold: float, reference: float | None) -> float | None:
        return threshold


def test_the_plot_draws_the_recorded_line_of_any_kind(tmp_path):
    """Bug caught: the plot computing the line from the kind's name again (a kind it does not know draws nothing)."""
    gates = (
        GateVerdict("ndcg@10:at_least=0.3", "at_least", "ndcg@10", 0.3, "pass", None, pass_line=AtLeast().pass_line(0.3, None)),
        GateVerdict("ndcg@10:trend=0.005", "trend", "ndcg@10", 0.005, "pass", 0.8),
    )  # fmt: skip
    store = HistoryStore(tmp_path)
    store.put(record("a" * 40, [1.0, 0.5], when="2026-01-01T00:00:00Z", gates=gates))
    store.put(record("b" * 40, [1.0, 0.0], when="2026-01-02T00:00:00Z", gates=gates))
    assert thresholds(store.records(), "ndcg@10") == {"ndcg@10:at_least=0.3": [(0, 0.3), (1, 0.3)]}
    assert thresholds(store.records(), "mrr@10") == {}


def test_a_record_written_before_pass_lines_reads_as_it_was_drawn(tmp_path):
    kinds = ["floor", "max_drop", "max_drop_from_first", "max_drop_from_best", "max_rel_drop", "trend", "min_gain"]
    gates = tuple(
        GateVerdict(f"ndcg@10:{k}", k, "ndcg@10", THRESHOLD, "pass", REFERENCE, pass_line=EXPECTED.get(k))
        for k in kinds
    )
    store = HistoryStore(tmp_path)
    path = store.put(record("a" * 40, [1.0, 0.5], when="2026-01-01T00:00:00Z", gates=gates))
    assert [g.pass_line for g in read_record(path).gates] == [EXPECTED.get(k) for k in kinds]  # round trip
    data = json.loads(path.read_text())
    for g in data["gates"]:
        del g["pass_line"]
    path.write_text(json.dumps(data))
    old = read_record(path).gates
    assert [g.pass_line for g in old] == pytest.approx([EXPECTED.get(k) for k in kinds])
    without_reference = dict(data["gates"][1], reference=None)
    data["gates"] = [data["gates"][0] | {"reference": None}, without_reference]
    path.write_text(json.dumps(data))
    assert [g.pass_line for g in read_record(path).gates] == [THRESHOLD, None]
