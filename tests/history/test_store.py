"""The history store: records round-trip, a re-run replaces its own record, concurrent writers lose nothing, and
bad input (corrupt, newer schema, unwritable directory, another model under one file name, a failed write) is a
typed error naming the file, with the old record left whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from evalsuite.base.errors import HistoryError
from evalsuite.history.record import GateVerdict, read_record
from evalsuite.history.store import LOCK_NAME, HistoryStore

from .conftest import record

REPO = Path(__file__).resolve().parents[2]


def test_a_record_round_trips_and_lists_in_release_order(tmp_path: Path):
    store = HistoryStore(tmp_path / "h")
    late = record("b" * 40, [0.5, 1.0, 0.0], when="2026-01-02T00:00:00Z")
    early = record("a" * 40, [1.0, 1.0, 0.5], when="2026-01-01T00:00:00Z")
    store.put(late)
    path = store.put(early)
    assert path == tmp_path / "h" / "minilm" / "minibeir" / f"{'a' * 40}.json"
    back = read_record(path)
    assert back == replace(early, first_recorded_at=early.recorded_at)  # every field, per-query scores included
    assert back.scores("ndcg@10") == {"q000": 1.0, "q001": 1.0, "q002": 0.5}
    assert [r.revision[0] for r in store.records()] == ["a", "b"]  # by first recorded time, not by write order


def test_a_rerun_replaces_its_record_keeping_its_place_and_its_verdicts(tmp_path: Path):
    store = HistoryStore(tmp_path)
    gate = GateVerdict("ndcg@10:max_drop=0.01", "max_drop", "ndcg@10", 0.01, "pass", 0.8, -0.002, -0.01, 0.006)
    store.put(record("a" * 40, [1.0, 0.0], when="2026-01-01T00:00:00Z", gates=(gate,)))
    store.put(record("b" * 40, [1.0, 0.5], when="2026-01-02T00:00:00Z"))
    # the baseline refresh of release a, a day later: no gate judged, same revision
    path = store.put(record("a" * 40, [1.0, 0.0], when="2026-01-03T00:00:00Z"))
    again = read_record(path)
    assert again.recorded_at == "2026-01-03T00:00:00Z" and again.first_recorded_at == "2026-01-01T00:00:00Z"
    assert again.gates == (gate,)
    assert [r.revision[0] for r in store.records()] == ["a", "b"]
    assert len(list(tmp_path.rglob("*.json"))) == 2


def test_a_corrupt_record_names_its_file_and_what_to_do(tmp_path: Path):
    store = HistoryStore(tmp_path)
    path = store.put(record("a" * 40, [1.0], when="2026-01-01T00:00:00Z"))
    path.write_text('{"schema_version": 1, "kind": "evalsuite-history-record", "model": ')
    with pytest.raises(HistoryError, match=rf"{path}: not valid JSON at line 1 .*delete the file"):
        store.records()
    data = record("a" * 40, [1.0], when="2026-01-01T00:00:00Z").to_dict()
    data["per_query"] = {"ndcg@10": [1.0, 0.5]}  # two scores for one query id
    path.write_text(json.dumps(data))
    with pytest.raises(HistoryError, match=r"per_query\['ndcg@10'\] has 2 scores for 1 query ids"):
        store.records()
    with pytest.raises(HistoryError, match=str(path)):  # a writer refuses to replace what it cannot read
        store.put(record("a" * 40, [1.0], when="2026-01-02T00:00:00Z"))


def test_a_record_of_a_newer_schema_asks_for_an_upgrade(tmp_path: Path):
    path = HistoryStore(tmp_path).put(record("a" * 40, [1.0], when="2026-01-01T00:00:00Z"))
    data = json.loads(path.read_text())
    data["schema_version"] = 2
    path.write_text(json.dumps(data))
    with pytest.raises(HistoryError, match=rf"{path}: history record schema_version 2 .*newer evalsuite.*upgrade"):
        read_record(path)


def test_an_unwritable_history_directory_is_an_error_naming_it(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = HistoryStore(blocker / "history")
    with pytest.raises(HistoryError, match=rf"history directory {blocker / 'history'}: cannot be written.*--history"):
        store.check_writable()
    with pytest.raises(HistoryError, match="cannot be written"):
        store.put(record("a" * 40, [1.0], when="2026-01-01T00:00:00Z"))


def test_another_model_under_the_same_file_name_is_refused_not_overwritten(tmp_path: Path):
    store = HistoryStore(tmp_path)
    path = store.put(record("a" * 40, [1.0], when="2026-01-01T00:00:00Z", model="org/minilm"))
    with pytest.raises(HistoryError, match=rf"{path}: holds org/minilm @ aaaa.*not org_minilm @ aaaa.*own directory"):
        store.put(record("a" * 40, [0.0], when="2026-01-02T00:00:00Z", model="org_minilm"))
    assert read_record(path).model == "org/minilm"


def test_a_failed_write_leaves_the_old_record_whole_and_no_temporary_file(tmp_path: Path, monkeypatch):
    store = HistoryStore(tmp_path)
    path = store.put(record("a" * 40, [1.0, 0.5], when="2026-01-01T00:00:00Z"))
    before = path.read_bytes()

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(HistoryError, match=rf"{path}: cannot be written \(No space left on device\); the history is"):
        store.put(record("a" * 40, [0.0, 0.0], when="2026-01-02T00:00:00Z"))
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[3])
    from pathlib import Path
    from evalsuite.history.store import HistoryStore
    from tests.history.conftest import record

    store, who = HistoryStore(sys.argv[1]), sys.argv[2]
    for i in range(25):
        store.put(record(f"{who}{i:039d}", [i / 25, 1.0], when=f"2026-01-01T00:00:{i:02d}Z"))
        store.put(record("shared" + "0" * 34, [float(who == "a"), 0.0], when=f"2026-01-0{1 + (who == 'b')}T00:00:{i:02d}Z"))
    """
)


def _writer(root: Path, who: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), who, str(REPO)], env=env, text=True, stderr=subprocess.PIPE
    )


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path):
    root = tmp_path / "h"
    procs = [_writer(root, "a"), _writer(root, "b")]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read() if p.stderr else ""
    records = HistoryStore(root).records()
    revisions = {r.revision for r in records}
    assert revisions == {f"{w}{i:039d}" for w in "ab" for i in range(25)} | {"shared" + "0" * 34}
    shared = next(r for r in records if r.revision.startswith("shared"))
    # the first write of the shared key (either process's first) keeps its time through every later replace
    assert shared.first_recorded_at in ("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")
    assert shared.recorded_at.endswith(":24Z")  # and the last write is whole
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]


def test_a_writer_waits_for_the_lock(tmp_path: Path):
    store = HistoryStore(tmp_path)
    with store.locked():
        proc = _writer(tmp_path, "a")
        time.sleep(1.5)
        assert proc.poll() is None  # blocked on the lock
        assert not list(tmp_path.glob("*/*/*.json"))
    assert proc.wait(timeout=120) == 0
    assert len(store.records()) == 26
    assert (tmp_path / LOCK_NAME).exists()
