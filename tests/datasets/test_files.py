"""Compressed files, encodings, line endings and paths: read transparently or refused with file:line."""

import gzip
import json
import re
from pathlib import Path

import pytest

from evalsuite.base.errors import DatasetError
from evalsuite.datasets import load_dataset


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_compressed_files_read_like_plain_ones(tmp_path, files, suffix):
    plain = load_dataset(files.dataset(tmp_path / "plain"))
    packed = load_dataset(
        files.dataset(tmp_path / "packed", corpus_suffix=suffix, queries_suffix=suffix, qrels_suffix=suffix)
    )
    assert dict(packed.corpus) == dict(plain.corpus) and dict(packed.queries) == dict(plain.queries)
    assert packed.qrels == plain.qrels
    assert set(packed.identity.files) == {f"corpus.jsonl{suffix}", f"queries.jsonl{suffix}", f"qrels/test.tsv{suffix}"}
    # the identity is the content's: compressing a dataset does not make it another dataset
    assert packed.identity.sha256 == plain.identity.sha256
    assert packed.identity.files[f"corpus.jsonl{suffix}"] == plain.identity.files["corpus.jsonl"]


def test_plain_file_wins_over_compressed_sibling_with_a_warning(tmp_path, files):
    root = files.dataset(tmp_path / "d")
    files.write(root / "corpus.jsonl", files.jsonl([{"_id": "x", "text": "other"}]), ".gz")
    ds = load_dataset(root)
    assert "d1" in ds.corpus and "x" not in ds.corpus
    assert any("corpus.jsonl.gz both exist; reading corpus.jsonl only" in w for w in ds.warnings)


def test_explicit_compressed_qrels_file(tmp_path, files):
    root = files.dataset(tmp_path / "d")
    other = files.write(tmp_path / "other.tsv", files.tsv([("q1", "d1", 1)]), ".gz")
    assert load_dataset(root, qrels=other).qrels == {"q1": {"d1": 1}}


def test_plain_named_file_holding_gzip_is_read(tmp_path, files):
    root = files.dataset(tmp_path / "d", corpus=gzip.compress(files.jsonl(files.CORPUS)))
    assert load_dataset(root).corpus["d1"] == "Wings lift on a wing in subsonic flow"


def test_corrupt_gzip_names_the_file(tmp_path, files):
    data = gzip.compress(files.jsonl(files.CORPUS * 1) + b"\n" * 10)
    root = files.dataset(tmp_path / "d")
    (root / "corpus.jsonl").unlink()
    (root / "corpus.jsonl.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=r"corpus.jsonl.gz:\d+: corrupt or truncated compressed data"):
        load_dataset(root)


def test_gz_name_over_html_is_refused(tmp_path, files):
    root = files.dataset(tmp_path / "d")
    (root / "corpus.jsonl").unlink()
    (root / "corpus.jsonl.gz").write_bytes(b"<html>404 Not Found</html>\n")
    with pytest.raises(
        DatasetError,
        match=r"corpus.jsonl.gz: the name says .gz but the file is not .gz data "
        r"\(it starts with '<html>",
    ):
        load_dataset(root)


BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("which", ["corpus", "queries", "qrels"])
def test_utf8_bom_is_ignored_in_every_file(tmp_path, files, which):
    plain = load_dataset(files.dataset(tmp_path / "plain"))
    data = {"corpus": files.jsonl(files.CORPUS), "queries": files.jsonl(files.QUERIES), "qrels": files.tsv(files.QRELS)}
    data[which] = BOM + data[which]
    ds = load_dataset(files.dataset(tmp_path / "bom", **data))
    assert dict(ds.corpus) == dict(plain.corpus) and dict(ds.queries) == dict(plain.queries) and ds.qrels == plain.qrels


def test_bom_in_trec_qrels(tmp_path, files):
    root = files.dataset(tmp_path / "d")
    (root / "qrels" / "test.tsv").unlink()
    (root / "qrels" / "test.trec").write_bytes(BOM + b"q1 0 d1 2\r\nq2 0 d2 1\r\n")
    assert load_dataset(root).qrels == {"q1": {"d1": 2}, "q2": {"d2": 1}}


def test_crlf_blank_lines_and_trailing_whitespace(tmp_path, files):
    plain = load_dataset(files.dataset(tmp_path / "plain"))
    corpus = files.jsonl(files.CORPUS).replace(b"\n", b"  \r\n\r\n   \r\n")
    queries = b"\r\n" + files.jsonl(files.QUERIES).replace(b"\n", b"\t\r\n")
    qrels = files.tsv(files.QRELS).replace(b"\n", b" \t\r\n\r\n")
    ds = load_dataset(files.dataset(tmp_path / "crlf", corpus, queries, qrels))
    assert dict(ds.corpus) == dict(plain.corpus) and dict(ds.queries) == dict(plain.queries) and ds.qrels == plain.qrels


def test_space_separated_beir_header(tmp_path, files):
    qrels = b"query-id corpus-id score\nq1 d1 1\n"
    assert load_dataset(files.dataset(tmp_path / "d", qrels=qrels)).qrels == {"q1": {"d1": 1}}


@pytest.mark.parametrize("which, line", [("corpus", 2), ("queries", 3), ("qrels", 3)])
def test_invalid_utf8_names_file_and_line(tmp_path, files, which, line):
    data = {"corpus": files.jsonl(files.CORPUS), "queries": files.jsonl(files.QUERIES), "qrels": files.tsv(files.QRELS)}
    lines = data[which].split(b"\n")
    lines[line - 1] = lines[line - 1][:3] + b"\xff\xfe" + lines[line - 1][3:]
    data[which] = b"\n".join(lines)
    with pytest.raises(DatasetError, match=rf":{line}: not valid UTF-8") as err:
        load_dataset(files.dataset(tmp_path / "d", **data))
    assert err.value.line == line and which in err.value.path


def test_utf16_file_is_named_as_such(tmp_path, files):
    qrels = files.tsv(files.QRELS).decode().encode("utf-16")
    with pytest.raises(DatasetError, match=r"test.tsv:1: the file is UTF-16"):
        load_dataset(files.dataset(tmp_path / "d", qrels=qrels))


def test_cr_only_line_endings_get_a_hint(tmp_path, files):
    corpus = files.jsonl(files.CORPUS).replace(b"\n", b"\r")
    with pytest.raises(DatasetError, match=r"corpus.jsonl:1: invalid JSON .* CR \(old Mac\) line endings"):
        load_dataset(files.dataset(tmp_path / "d", corpus=corpus))


@pytest.mark.parametrize(
    "line, message",
    [
        ("[" * 100000 + "]" * 100000, "invalid JSON"),
        ('{"_id": "d9", "text": "x", "n": ' + "9" * 5000 + "}", "invalid JSON"),
        ('{"_id": "d9", "text": "bad \\ud800 surrogate"}', "unpaired surrogate"),
        ('{"_id": "d9", "text": 42}', "field 'text' must be a string"),
        ('{"_id": "d9", "title": ["a"], "text": "x"}', "field 'title' must be a string"),
        ('{"id": "d9", "contents": "pyserini style"}', "missing field '_id' (the record has 'id', 'contents')"),
        ('{"_id": "d9", "body": "x"}', "missing field 'text'"),
        ("42", "expected a JSON object, got int"),
    ],
)
def test_odd_records_are_refused_with_line(tmp_path, files, line, message):
    corpus = files.jsonl(files.CORPUS) + line.encode() + b"\n"
    with pytest.raises(DatasetError) as err:
        load_dataset(files.dataset(tmp_path / "d", corpus=corpus))
    assert "corpus.jsonl:4: " in str(err.value) and message in str(err.value)


def test_missing_qrels_file_or_directory(tmp_path, files):
    root = files.dataset(tmp_path / "d")
    with pytest.raises(DatasetError, match=r"nope.tsv: qrels file not found; check the --qrels path"):
        load_dataset(root, qrels=tmp_path / "nope.tsv")
    with pytest.raises(
        DatasetError,
        match=r"qrels: --qrels names a directory \(it holds test.tsv\); pass the qrels "
        r"file itself",
    ):
        load_dataset(root, qrels=root / "qrels")


def test_missing_files_say_what_is_there_and_what_to_do(tmp_path, files):
    root = files.dataset(tmp_path / "d")
    (root / "queries.jsonl").unlink()
    with pytest.raises(DatasetError, match=r"queries.jsonl: file not found .* holds: corpus.jsonl, qrels/"):
        load_dataset(root)
    files.dataset(tmp_path / "outer" / "inner")
    with pytest.raises(DatasetError, match=r"one level down: pass --dataset .*inner"):
        load_dataset(tmp_path / "outer")
    (root / "queries.jsonl").mkdir()
    with pytest.raises(DatasetError, match=r"queries.jsonl: is a directory, expected a file"):
        load_dataset(root)


def test_missing_qrels_directory_and_dataset_path(tmp_path, files):
    root = files.dataset(tmp_path / "d")
    (root / "qrels" / "test.tsv").unlink()
    (root / "qrels").rmdir()
    with pytest.raises(DatasetError, match=r"qrels: no qrels directory"):
        load_dataset(root)
    with pytest.raises(DatasetError, match=r"dataset path does not exist"):
        load_dataset(tmp_path / "absent")
    with pytest.raises(DatasetError, match=r"dataset path must be a directory"):
        load_dataset(files.dataset(tmp_path / "e") / "corpus.jsonl")


def test_unreadable_file(files):
    """Read by a process that dropped root for nobody (root reads any file): the unreadable corpus is named."""
    import shutil
    import tempfile

    from tests.privileges import as_user

    base = Path(tempfile.mkdtemp(prefix="evalsuite-unreadable-"))
    try:
        base.chmod(0o755)
        root = files.dataset(base / "d")
        for p in (root, *root.rglob("*")):
            p.chmod(0o755 if p.is_dir() else 0o644)
        (root / "corpus.jsonl").chmod(0)
        outcome, message = as_user(lambda: load_dataset(root))
        assert outcome == "raised" and message.startswith("DatasetError: "), message
        assert re.search(r"corpus.jsonl: cannot be read", message), message
    finally:
        shutil.rmtree(base)


def test_empty_files(tmp_path, files):
    with pytest.raises(DatasetError, match=r"corpus.jsonl: no documents"):
        load_dataset(files.dataset(tmp_path / "a", corpus=b"\n\n"))
    with pytest.raises(DatasetError, match=r"queries.jsonl: no queries"):
        load_dataset(files.dataset(tmp_path / "b", queries=b""))
    with pytest.raises(DatasetError, match=r"test.tsv: no query of split 'test' .* no judgements"):
        load_dataset(files.dataset(tmp_path / "c", qrels=b"query-id\tcorpus-id\tscore\n"))


@pytest.mark.parametrize("head, what", [(b"PK\x03\x04", "a zip archive"), (b"\x28\xb5\x2f\xfd", "zstd-compressed")])
def test_unsupported_archives_are_named(tmp_path, files, head, what):
    with pytest.raises(DatasetError, match=rf"corpus.jsonl: the file is {what}"):
        load_dataset(files.dataset(tmp_path / "d", corpus=head + b"\0" * 20))


def test_dataset_path_is_an_archive(tmp_path):
    (tmp_path / "scifact.zip").write_bytes(b"PK\x03\x04")
    with pytest.raises(DatasetError, match=r"scifact.zip: dataset path must be a directory .* extract the archive"):
        load_dataset(tmp_path / "scifact.zip")


def test_json_array_file_gets_a_hint(tmp_path, files):
    corpus = json.dumps(files.CORPUS).encode() + b"\n"
    with pytest.raises(
        DatasetError,
        match=r"corpus.jsonl:1: expected a JSON object, got list; the line is one JSON "
        r"array: write one object per line",
    ):
        load_dataset(files.dataset(tmp_path / "d", corpus=corpus))


def test_comma_separated_qrels_with_header(tmp_path, files):
    qrels = b"query-id,corpus-id,score\nq1,d1,1\nq2,d2,1.0\n"
    assert load_dataset(files.dataset(tmp_path / "d", qrels=qrels)).qrels == {"q1": {"d1": 1}, "q2": {"d2": 1}}


def test_raw_tab_inside_a_json_string_is_read(tmp_path, files):
    corpus = files.jsonl(files.CORPUS) + b'{"_id": "d4", "text": "col1\tcol2"}\n'
    assert load_dataset(files.dataset(tmp_path / "d", corpus=corpus)).corpus["d4"] == "col1\tcol2"
    corpus = files.jsonl(files.CORPUS) + b'{"_id": "d\t4", "text": "x"}\n'
    with pytest.raises(DatasetError, match=r"corpus.jsonl:4: document id 'd\\t4' contains a tab"):
        load_dataset(files.dataset(tmp_path / "e", corpus=corpus))
