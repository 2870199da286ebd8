"""Compute once across processes (as pytest-xdist workers do), and the ledger they send home."""

import multiprocessing
import time
from pathlib import Path

from evalsuite.gating.gates import Gate, Outcome
from evalsuite.gating.ledger import BaselineWritten, Computation, GateRecord, Ledger, SweepCellRecord
from evalsuite.gating.shared import ComputeOnce


def _worker(shared: str, log: str, barrier) -> None:
    def compute() -> dict:
        with open(log, "a") as f:
            f.write("computed\n")
        time.sleep(0.3)  # the other process asks while this one computes
        return {"value": 42}

    barrier.wait()
    value, _ = ComputeOnce(Path(shared)).get("candidate-small", compute)
    assert value == {"value": 42}


def test_two_processes_compute_once(tmp_path):
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    log = tmp_path / "log"
    procs = [ctx.Process(target=_worker, args=(str(tmp_path / "shared"), str(log), barrier)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0]
    assert log.read_text().count("computed") == 1
    assert ComputeOnce(tmp_path / "shared").peek("candidate-small") == {"value": 42}  # as the controller reads it


def test_in_process_memo_and_peek(tmp_path):
    calls = []
    once = ComputeOnce()
    assert once.peek("k") is None
    assert once.get("k", lambda: calls.append(1) or "v") == ("v", True)
    assert once.get("k", lambda: calls.append(1) or "w") == ("v", False)
    assert calls == [1] and once.peek("k") == "v"


def test_ledger_round_trip_keeps_types_and_order():
    gate = Gate("ndcg@10", "floor", 0.3, "ndcg@10>=0.3", needs_reference=False)
    worker = Ledger()
    records = [
        GateRecord("small", "gate[ndcg@10>=0.3]", Outcome(gate, "pass", 0.5)),
        SweepCellRecord("small", "sweep[dim=16]", "dim=16", Outcome(gate, "fail", 0.2)),
        Computation("candidate", "small", "gw1"),
        BaselineWritten("small", Path("b.json")),
    ]
    for r in records:
        worker.add(r)
    controller = Ledger()
    controller.merge(worker.to_output())
    assert controller.records == records
    assert controller.outcomes("small") == records[:2] and controller.outcomes("other") == []
    assert controller.computations() == [records[2]] and controller.baselines_written() == [records[3]]
