"""The on-disk corpus (chunked runs) reads the same dataset as the in-memory reader, refuses the same files
with the same messages, and fails with a typed error when its file changes or its spool cannot be written."""

from __future__ import annotations

import errno
import gc
import gzip
import json
import os
import pickle
from pathlib import Path

import pytest

from evalsuite.base.errors import DatasetChanged, DatasetError, SpoolError
from evalsuite.datasets import LazyCorpus, load_dataset, ondisk, spool
from evalsuite.datasets import idindex as idindex_module
from evalsuite.datasets.idindex import IdBuilder, IdIndex

SUFFIXES = ["", ".gz", ".bz2", ".xz"]


def lines(*rows: object) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


# every quirk the reader accepts: BOM, CRLF, blank lines, integer ids, metadata, an empty document,
# raw tabs inside strings, non-ASCII ids and texts, a null title
TRICKY = (
    "\ufeff"
    + json.dumps({"_id": "d1", "title": "Wings", "text": "lift on a wing", "topic": "aero", "metadata": {"year": 1958}})
    + "\r\n"
    + "\r\n"
    + json.dumps({"_id": 2, "title": None, "text": "boundary\tlayer on a plate"})
    + "\r\n"
    + json.dumps({"_id": "d3", "title": "", "text": ""})
    + "\n\n"
    + json.dumps({"_id": "dé4", "title": "Heat", "text": "hypersonic heating ✈", "topic": "heat"}, ensure_ascii=False)
    + "\n"
    + json.dumps({"_id": "d5", "title": "Shock", "text": "a shock wave"})
).encode()  # no line end after the last record
TRICKY_QRELS = [("q1", "d1", 2), ("q2", "2", 1), ("q3", "dé4", 1), ("q3", "d3", 1), ("q1", "d5", 0)]


def both(root: Path, tmp_path: Path, **kw: object):
    eager = load_dataset(root, **kw)  # type: ignore[arg-type]
    lazy = load_dataset(root, on_disk=True, spool_dir=tmp_path / "spool", **kw)  # type: ignore[arg-type]
    return eager, lazy


def assert_same(eager, lazy) -> None:
    assert isinstance(lazy.corpus, LazyCorpus) and not isinstance(eager.corpus, LazyCorpus)
    assert lazy.identity == eager.identity  # sha256, files, counts and policies
    assert list(lazy.corpus) == list(eager.corpus) and len(lazy.corpus) == len(eager.corpus)
    # the ids of a corpus on disk stay its compact index: the same ids, never a list of them
    assert isinstance(eager.doc_ids, list) and isinstance(lazy.doc_ids, IdIndex)
    assert lazy.doc_ids is lazy.corpus.id_sequence and list(lazy.doc_ids) == eager.doc_ids
    assert [lazy.doc_ids[i] for i in range(len(eager.doc_ids))] == eager.doc_ids
    assert dict(lazy.corpus.items()) == dict(eager.corpus)
    assert lazy.queries == eager.queries and lazy.qrels == eager.qrels
    assert lazy.doc_fields == eager.doc_fields and lazy.query_fields == eager.query_fields
    assert lazy.warnings == eager.warnings
    for size in (1, 2, 3, 100):
        chunks = list(lazy.corpus_chunks(size))
        assert chunks == list(eager.corpus_chunks(size))
        assert [i for ids, _ in chunks for i in ids] == list(eager.corpus)


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("policy", ["keep", "skip"])
def test_the_on_disk_corpus_is_the_in_memory_one(tmp_path, files, suffix, policy):
    root = files.dataset(
        tmp_path / "d",
        corpus=TRICKY,
        queries=lines(*({"_id": f"q{i}", "text": f"query {i}"} for i in (1, 2, 3))),
        qrels=files.tsv(TRICKY_QRELS),
        corpus_suffix=suffix,
    )
    eager, lazy = both(root, tmp_path, empty_docs=policy)
    assert_same(eager, lazy)
    assert lazy.corpus["d1"] == "Wings lift on a wing" and lazy.corpus["2"] == "boundary\tlayer on a plate"
    assert lazy.corpus["dé4"] == "Heat hypersonic heating ✈"
    assert ("d3" in lazy.corpus) == (policy == "keep") and "d9" not in lazy.corpus and 2 not in lazy.corpus
    assert lazy.doc_fields["d1"] == {"topic": "aero", "metadata.year": "1958"}
    spooled = list((tmp_path / "spool").glob("corpus-*.jsonl"))
    assert len(spooled) == (1 if suffix else 0)  # only a compressed corpus is copied
    if suffix:
        assert spooled[0].read_bytes() == TRICKY  # the decompressed bytes, BOM and CRLF included
    with pytest.raises(KeyError):
        lazy.corpus["d9"]


def test_minibeir_on_disk_equals_in_memory(minibeir_dir, tmp_path):
    assert_same(*both(minibeir_dir, tmp_path))


def test_lookups_by_id_and_in_bulk(tmp_path, files):
    root = files.dataset(tmp_path / "d", corpus=TRICKY, qrels=files.tsv([("q1", "d1", 1)]))
    corpus = load_dataset(root, on_disk=True).corpus
    assert isinstance(corpus, ondisk.OnDiskCorpus)
    assert corpus.texts(["d5", "d1", "d5"]) == ["Shock a shock wave", "Wings lift on a wing", "Shock a shock wave"]
    with pytest.raises(KeyError, match="nope"):
        corpus.texts(["d1", "nope"])
    assert list(corpus.without(["d1", "d5", "absent"])) == ["2", "d3", "dé4"]
    assert corpus.without(["d1"])["d5"] == "Shock a shock wave"


BAD_CORPORA = {
    "duplicate": lines({"_id": "a", "text": "x"}, {"_id": "b", "text": "y"}, {"_id": "a", "text": "z"}),
    "duplicate on line 1 after a BOM": b"\xef\xbb\xbf" + lines({"_id": "a", "text": "x"}, {"_id": "a", "text": "y"}),
    "duplicate before bad JSON": lines({"_id": "a", "text": "x"}, "", {"_id": "a", "text": "y"}, "{broken"),
    "bad JSON before a duplicate": lines({"_id": "a", "text": "x"}, "{broken", {"_id": "a", "text": "y"}),
    "duplicate whose text is bad": lines({"_id": "a", "text": "x"}, {"_id": "a", "text": 5}),
    "the earliest second occurrence wins": lines(
        {"_id": "a", "text": "x"}, {"_id": "b", "text": "y"}, {"_id": "b", "text": "z"}, {"_id": "a", "text": "w"}
    ),
    "an integer id repeating a string id": lines({"_id": "7", "text": "x"}, {"_id": 7, "text": "y"}),
    "three times": lines(*({"_id": "a", "text": str(i)} for i in range(3))),
    "CRLF duplicate": lines({"_id": "a", "text": "x"}).replace(b"\n", b"\r\n") * 2,
    "missing id": lines({"_id": "a", "text": "x"}, {"text": "y"}),
    "float id": lines({"_id": 1.0, "text": "x"}),
    "id with a space": lines({"_id": "a b", "text": "x"}),
    "missing text": lines({"_id": "a", "title": "t"}),
    "title not a string": lines({"_id": "a", "title": 3, "text": "x"}),
    "an array per line": lines([{"_id": "a", "text": "x"}]),
    "no documents": b"\n\n",
    "UTF-16": "\ufeff{}".encode("utf-16-le"),
    "not UTF-8": b'{"_id": "a", "text": "\xff"}\n',
    "every document empty": lines({"_id": "a", "text": ""}, {"_id": "b", "title": "", "text": " "}),
}


@pytest.mark.parametrize("suffix", ["", ".gz"])
@pytest.mark.parametrize("case", list(BAD_CORPORA))
def test_a_bad_corpus_is_refused_with_the_in_memory_readers_message(tmp_path, files, case, suffix):
    root = files.dataset(tmp_path / "d", corpus=BAD_CORPORA[case], corpus_suffix=suffix)
    with pytest.raises(DatasetError) as eager:
        load_dataset(root)
    with pytest.raises(DatasetError) as lazy:
        load_dataset(root, on_disk=True, spool_dir=tmp_path / "spool")
    assert str(lazy.value) == str(eager.value)
    assert (lazy.value.path, lazy.value.line) == (eager.value.path, eager.value.line)
    del lazy
    gc.collect()  # an error after the corpus was read (in assembling) frees it with its traceback
    assert list((tmp_path / "spool").glob("*")) == []  # no spool left behind


def test_empty_document_policy_error_and_duplicates_keep_their_order(tmp_path, files):
    cases = {
        "empty first": lines({"_id": "a", "text": ""}, {"_id": "b", "text": "x"}, {"_id": "b", "text": "y"}),
        "duplicate first": lines({"_id": "b", "text": "x"}, {"_id": "b", "text": "y"}, {"_id": "a", "text": ""}),
        "empty duplicate": lines({"_id": "b", "text": "x"}, {"_id": "b", "text": ""}),
    }
    for name, data in cases.items():
        root = files.dataset(tmp_path / name, corpus=data)
        with pytest.raises(DatasetError) as eager:
            load_dataset(root, empty_docs="error")
        with pytest.raises(DatasetError) as lazy:
            load_dataset(root, empty_docs="error", on_disk=True)
        assert str(lazy.value) == str(eager.value), name


def test_a_truncated_gzip_corpus_is_refused_like_in_memory(tmp_path, files):
    data = gzip.compress(lines(*({"_id": f"d{i}", "text": "word " * 50} for i in range(400))))
    root = files.dataset(tmp_path / "d", corpus=data[: len(data) // 2], corpus_suffix="")
    (root / "corpus.jsonl").rename(root / "corpus.jsonl.gz")
    with pytest.raises(DatasetError) as eager:
        load_dataset(root)
    with pytest.raises(DatasetError) as lazy:
        load_dataset(root, on_disk=True, spool_dir=tmp_path / "spool")
    assert str(lazy.value) == str(eager.value) and "corrupt or truncated" in str(lazy.value)
    assert list((tmp_path / "spool").iterdir()) == []  # the partial copy is deleted


def test_a_corpus_file_changed_after_indexing_is_a_typed_error(tmp_path, files):
    root = files.dataset(tmp_path / "d")
    ds = load_dataset(root, on_disk=True)
    assert ds.corpus["d1"]
    path = root / "corpus.jsonl"
    with open(path, "ab") as fh:
        fh.write(lines({"_id": "d4", "text": "appended"}))
    with pytest.raises(DatasetChanged, match=r"corpus\.jsonl.*changed \(size .*re-run the evaluation") as exc:
        ds.corpus["d1"]
    assert exc.value.path == str(path)
    with pytest.raises(DatasetChanged):
        next(ds.corpus_chunks(2))
    # the same size, another modification time (an editor saving the file over)
    ds = load_dataset(root, on_disk=True)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(DatasetChanged, match="changed"):
        ds.corpus["d2"]
    ds = load_dataset(root, on_disk=True)
    path.unlink()
    with pytest.raises(DatasetChanged, match="is gone"):
        ds.corpus["d2"]


def test_a_deleted_spool_is_a_typed_error(tmp_path, files):
    root = files.dataset(tmp_path / "d", corpus_suffix=".gz")
    ds = load_dataset(root, on_disk=True, spool_dir=tmp_path / "spool")
    (spool,) = (tmp_path / "spool").iterdir()
    spool.unlink()
    with pytest.raises(DatasetChanged, match=rf"corpus\.jsonl\.gz.*decompressed copy {spool}\) is gone.*re-run"):
        ds.corpus["d1"]


def test_the_spool_lives_as_long_as_the_corpus_and_copies_borrow_it(tmp_path, files):
    root = files.dataset(tmp_path / "d", corpus_suffix=".xz")
    ds = load_dataset(root, on_disk=True, spool_dir=tmp_path / "spool", empty_docs="skip")
    copy = pickle.loads(pickle.dumps(ds))  # a shared session result read by another process
    assert dict(copy.corpus.items()) == dict(ds.corpus.items())
    del copy
    gc.collect()
    assert len(list((tmp_path / "spool").iterdir())) == 1  # an unpickled copy never deletes the file
    del ds
    gc.collect()
    assert list((tmp_path / "spool").iterdir()) == []


def test_a_spool_directory_that_cannot_be_made_is_a_typed_error(tmp_path, files):
    root = files.dataset(tmp_path / "d", corpus_suffix=".gz")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(
        SpoolError, match=rf"cannot create the decompressed copy of {root}/corpus.jsonl.gz in {blocker}"
    ):
        load_dataset(root, on_disk=True, spool_dir=blocker)


def test_a_read_only_spool_directory_is_a_typed_error(tmp_path, files, monkeypatch):
    root = files.dataset(tmp_path / "d", corpus_suffix=".gz")
    if os.geteuid() != 0:  # a real read-only directory (root writes anywhere: simulated below)
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        with pytest.raises(SpoolError, match=rf"in {ro} \(Permission denied\); make the directory writable"):
            load_dataset(root, on_disk=True, spool_dir=ro)

    def read_only(**kw):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(spool.tempfile, "mkstemp", read_only)
    with pytest.raises(SpoolError, match=rf"in {tmp_path / 'x'} \(Read-only file system\)"):
        load_dataset(root, on_disk=True, spool_dir=tmp_path / "x")


def test_a_full_disk_while_spooling_is_a_typed_error_and_leaves_no_partial_copy(tmp_path, files, monkeypatch):
    corpus = lines(*({"_id": f"d{i}", "text": "word " * 40} for i in range(200)))
    root = files.dataset(tmp_path / "d", corpus=corpus, qrels=files.tsv([("q1", "d1", 1)]), corpus_suffix=".gz")

    class Full:
        def __init__(self, fd: int) -> None:
            self.fh = os.fdopen(fd, "wb")
            self.written = 0

        def write(self, data: bytes) -> int:
            if self.written + len(data) > 4096:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            self.written += len(data)
            return self.fh.write(data)

        def close(self) -> None:
            self.fh.close()

    monkeypatch.setattr(spool, "_open_spool", Full)
    with pytest.raises(
        SpoolError,
        match=r"cannot write the decompressed copy of .*corpus.jsonl.gz to .*corpus-.*\.jsonl \(No space left on device\); free disk space",
    ):
        load_dataset(root, on_disk=True, spool_dir=tmp_path / "spool")
    assert list((tmp_path / "spool").iterdir()) == []


def test_the_id_index_never_returns_another_id_on_a_hash_collision(monkeypatch):
    monkeypatch.setattr(idindex_module, "id_hash", lambda data: 42)  # every id collides
    builder = IdBuilder()
    for ident in ["b", "a", "c", "a2", "é"]:
        builder.add(ident)
    index = builder.build()
    assert [index.find(i) for i in ["b", "a", "c", "a2", "é", "zz"]] == [0, 1, 2, 3, 4, -1]
    assert index.first_duplicate() is None
    builder.add("c")
    builder.add("b")
    assert builder.build().first_duplicate() == (2, 5)  # c repeats first (line 6), b only later
    import numpy as np

    sub = index.subset(np.array([True, False, True, False, True]))
    assert list(sub) == ["b", "c", "é"] and [sub.find(i) for i in ["c", "a", "é"]] == [1, -1, 2]


def save_hf(root: Path, corpus: list[dict]) -> Path:
    datasets = pytest.importorskip("datasets")
    dd = datasets.DatasetDict(
        {
            "corpus": datasets.Dataset.from_list(corpus),
            "queries": datasets.Dataset.from_list([{"_id": "q", "text": "x"}, {"_id": "r", "text": "y"}]),
            "test": datasets.Dataset.from_list(
                [
                    {"query-id": "q", "corpus-id": "2", "score": 1},
                    {"query-id": "q", "corpus-id": "1", "score": 1},
                    {"query-id": "r", "corpus-id": "4", "score": 2},
                ]
            ),
        }
    )
    dd.save_to_disk(str(root))
    return root


HF_CORPUS = [
    {"_id": "1", "title": "t", "text": "a", "topic": "x"},
    {"_id": "2", "title": "", "text": ""},
    {"_id": "3", "title": None, "text": "  spaced  ", "topic": "y"},
    {"_id": "4", "title": "Heat", "text": "hypersonic ✈", "topic": "x"},
]


@pytest.mark.parametrize("policy", ["keep", "skip"])
def test_a_saved_hugging_face_corpus_stays_in_its_arrow_files(tmp_path, policy):
    from evalsuite.datasets.hf import ArrowCorpus

    root = save_hf(tmp_path / "hf", HF_CORPUS)
    eager, lazy = both(root, tmp_path, empty_docs=policy)
    assert isinstance(lazy.corpus, ArrowCorpus)
    assert_same(eager, lazy)
    assert lazy.corpus["3"] == "spaced" and ("2" in lazy.corpus) == (policy == "keep")
    assert lazy.corpus.texts(["4", "1"]) == ["Heat hypersonic ✈", "t a"]
    copy = pickle.loads(pickle.dumps(lazy.corpus))
    assert dict(copy.items()) == dict(eager.corpus)


@pytest.mark.parametrize(
    "corpus",
    [
        [{"_id": "1", "text": "a"}, {"_id": "2", "text": "b"}, {"_id": "1", "text": "c"}],
        [{"_id": "1", "text": "a"}, {"_id": "1", "text": ""}, {"_id": "2", "text": ""}],
        [{"_id": "1", "text": "a"}, {"_id": "", "text": "b"}, {"_id": "1", "text": "c"}],
        [{"_id": "1", "text": ""}, {"_id": "2", "text": "b"}, {"_id": "2", "text": "c"}],
    ],
)
def test_a_bad_saved_corpus_is_refused_like_in_memory(tmp_path, corpus):
    root = save_hf(tmp_path / "hf", corpus)
    with pytest.raises(DatasetError) as eager:
        load_dataset(root, empty_docs="error")
    with pytest.raises(DatasetError) as lazy:
        load_dataset(root, empty_docs="error", on_disk=True)
    assert str(lazy.value) == str(eager.value)


def test_a_saved_corpus_changed_after_indexing_is_a_typed_error(tmp_path):
    root = save_hf(tmp_path / "hf", HF_CORPUS)
    ds = load_dataset(root, on_disk=True)
    (arrow,) = (root / "corpus").glob("*.arrow")
    st = arrow.stat()
    os.utime(arrow, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(DatasetChanged, match=rf"{arrow}: .*changed.*re-run"):
        next(ds.corpus_chunks(2))
