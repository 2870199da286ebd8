"""The kept index of a corpus file (``datasets/corpusindex.py``): built once, reused for the same bytes only (the
same dataset as the in-memory reader, without parsing a record again), rebuilt when damaged, never a way around a
check."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

from evalsuite.base.errors import DatasetChanged, DatasetError
from evalsuite.datasets import corpusindex, load_dataset, ondisk
from evalsuite.datasets.idindex import IdIndex

TRICKY = (
    "\ufeff"
    + json.dumps({"_id": "d1", "title": "Wings", "text": "lift on a wing", "topic": "aero", "metadata": {"year": 1958}})
    + "\r\n\r\n"
    + json.dumps({"_id": 2, "title": None, "text": "boundary\tlayer on a plate"})
    + "\r\n"
    + json.dumps({"_id": "d3", "title": "", "text": ""})
    + "\n\n"
    + json.dumps({"_id": "dé4", "title": "Heat", "text": "hypersonic heating ✈", "topic": "heat"}, ensure_ascii=False)
    + "\n"
    + json.dumps({"_id": "d5", "title": "Shock", "text": "a shock wave"})
).encode()
QRELS = [("q1", "d1", 2), ("q2", "2", 1), ("q3", "dé4", 1), ("q3", "d3", 1), ("q1", "d5", 0)]


@pytest.fixture
def root(tmp_path, files) -> Path:
    queries = "".join(json.dumps({"_id": f"q{i}", "text": f"query {i}"}) + "\n" for i in (1, 2, 3)).encode()
    return files.dataset(tmp_path / "d", corpus=TRICKY, queries=queries, qrels=files.tsv(QRELS))


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("the corpus was parsed again")

    monkeypatch.setattr(ondisk, "_index", refuse)


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    assert a.identity == b.identity and a.warnings == b.warnings
    assert list(a.corpus) == list(b.corpus) and dict(a.corpus.items()) == dict(b.corpus.items())
    assert a.doc_fields == b.doc_fields and a.queries == b.queries and a.qrels == b.qrels


@pytest.mark.parametrize("policy", ["keep", "skip"])
def test_the_kept_index_gives_the_in_memory_dataset_without_parsing_again(root, tmp_path, monkeypatch, policy):
    eager = load_dataset(root, empty_docs=policy)
    first = load_dataset(root, empty_docs=policy, on_disk=True, index_dir=tmp_path / "idx")
    kept = list((tmp_path / "idx").rglob("*.arrow"))
    assert len(kept) == 1 and corpusindex.file_sha256(root / "corpus.jsonl") in kept[0].name
    _no_parsing(monkeypatch)
    again = load_dataset(root, empty_docs=policy, on_disk=True, index_dir=tmp_path / "idx")
    for lazy in (first, again):
        _same(eager, lazy)
    assert again.corpus["dé4"] == "Heat hypersonic heating ✈" and again.corpus.texts(["d5", "d1"]) == [
        "Shock a shock wave",
        "Wings lift on a wing",
    ]
    ids = again.doc_ids
    assert isinstance(ids, IdIndex)
    assert isinstance(ids.blob, memoryview) == (policy == "keep")  # used in place (memory-mapped) unless filtered
    assert ids.index("dé4") == (3 if policy == "keep" else 2) and "d9" not in ids
    assert list(ids.code_point_ranks()) == list(first.doc_ids.code_point_ranks())  # type: ignore[attr-defined]
    copy = pickle.loads(pickle.dumps(again.corpus))  # a shared session result travels to other processes
    assert dict(copy.items()) == dict(eager.corpus.items())


def test_other_bytes_of_the_same_size_and_time_are_indexed_again(root, tmp_path):
    corpus = root / "corpus.jsonl"
    load_dataset(root, on_disk=True, index_dir=tmp_path / "idx")
    st = corpus.stat()
    corpus.write_bytes(TRICKY.replace(b"a shock wave", b"a shock WAVE"))
    os.utime(corpus, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same modification time: only the bytes differ
    changed = load_dataset(root, on_disk=True, index_dir=tmp_path / "idx")
    assert changed.corpus["d5"] == "Shock a shock WAVE"
    assert changed.identity == load_dataset(root).identity
    assert len(list((tmp_path / "idx").rglob("*.arrow"))) == 2


def test_a_damaged_index_is_rebuilt_not_used(root, tmp_path):
    load_dataset(root, on_disk=True, index_dir=tmp_path / "idx")
    (kept,) = (tmp_path / "idx").rglob("*.arrow")
    data = bytearray(kept.read_bytes())
    at = data.find(b"d5")  # one id's bytes: "d5" becomes "d6", a valid id of the same length
    data[at + 1] = ord("6")
    kept.write_bytes(bytes(data))
    assert corpusindex.load(kept) is None
    again = load_dataset(root, on_disk=True, index_dir=tmp_path / "idx")
    assert "d5" in again.corpus and "d6" not in again.corpus
    kept.write_bytes(bytes(data[: len(data) // 2]))  # truncated
    assert corpusindex.load(kept) is None
    _same(load_dataset(root, on_disk=True, index_dir=tmp_path / "idx"), load_dataset(root))


def test_every_check_still_applies(tmp_path, files, root):
    # an index kept under 'keep' is not a way around 'error': the policy is part of the key
    load_dataset(root, on_disk=True, index_dir=tmp_path / "idx")
    with pytest.raises(DatasetError, match="empty title and text") as lazy:
        load_dataset(root, empty_docs="error", on_disk=True, index_dir=tmp_path / "idx")
    with pytest.raises(DatasetError) as eager:
        load_dataset(root, empty_docs="error")
    assert str(lazy.value) == str(eager.value)
    # a refused corpus leaves no index behind, and is refused again with the same message
    dup = files.dataset(tmp_path / "dup", corpus=b'{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n')
    for _ in range(2):
        with pytest.raises(DatasetError, match="duplicate document id 'a'"):
            load_dataset(dup, on_disk=True, index_dir=tmp_path / "idx2")
    assert not list((tmp_path / "idx2").rglob("*.arrow"))


def test_a_corpus_changed_after_a_reused_index_is_a_typed_error(root, tmp_path):
    load_dataset(root, on_disk=True, index_dir=tmp_path / "idx")
    ds = load_dataset(root, on_disk=True, index_dir=tmp_path / "idx")
    (root / "corpus.jsonl").write_bytes(TRICKY + b"\n")
    with pytest.raises(DatasetChanged, match="changed"):
        ds.corpus["d1"]


def test_an_index_directory_that_cannot_be_written_only_costs_the_reuse(root, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    _same(load_dataset(root, on_disk=True, index_dir=blocked / "idx"), load_dataset(root))
    assert blocked.read_text() == "not a directory"


def test_a_compressed_corpus_is_not_kept(tmp_path, files):
    root = files.dataset(tmp_path / "d", corpus=TRICKY, qrels=files.tsv([("q1", "d1", 1)]), corpus_suffix=".gz")
    ds = load_dataset(root, on_disk=True, spool_dir=tmp_path / "spool", index_dir=tmp_path / "idx")
    assert ds.corpus["d5"] == "Shock a shock wave" and not (tmp_path / "idx").exists()
