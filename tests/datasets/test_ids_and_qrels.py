"""Ids that would break TREC run lines, integer ids, relevance values and mismatch messages by side."""

import pytest

from evalsuite.base.errors import DatasetError
from evalsuite.datasets import load_dataset


@pytest.mark.parametrize(
    "bad, what",
    [
        ("d 2", "a space"),
        ("d\t2", "a tab"),
        ("d\n2", "a newline"),
        ("d\u00a02", "U+00A0"),
        ("d\x002", "U+0000"),
        ("d\u200b2", "U+200B"),
    ],
)
def test_document_ids_that_break_run_lines_are_refused(tmp_path, files, bad, what):
    corpus = [dict(d) for d in files.CORPUS]
    corpus[1]["_id"] = bad
    with pytest.raises(DatasetError) as err:
        load_dataset(files.dataset(tmp_path / "d", corpus=files.jsonl(corpus)))
    msg = str(err.value)
    assert "corpus.jsonl:2: document id" in msg and "contains " in msg and what in msg and "trec_eval" in msg
    assert err.value.line == 2


@pytest.mark.parametrize(
    "value, message",
    [
        ("", "empty document id"),
        ("   ", "empty document id"),
        (None, "must be a string or an integer, got null"),
        (True, "got true"),
        (1.5, "is a float"),
        ({"a": 1}, "got dict"),
    ],
)
def test_document_ids_of_the_wrong_kind(tmp_path, files, value, message):
    corpus = [dict(d) for d in files.CORPUS]
    corpus[2]["_id"] = value
    with pytest.raises(DatasetError, match=r"corpus.jsonl:3: ") as err:
        load_dataset(files.dataset(tmp_path / "d", corpus=files.jsonl(corpus)))
    assert message in str(err.value)


def test_query_id_with_space_is_refused(tmp_path, files):
    queries = [dict(q) for q in files.QUERIES]
    queries[0]["_id"] = "what is"
    with pytest.raises(DatasetError, match=r"queries.jsonl:1: query id 'what is' contains a space"):
        load_dataset(files.dataset(tmp_path / "d", queries=files.jsonl(queries)))


def test_qrels_id_with_space_is_refused(tmp_path, files):
    qrels = files.tsv([("q1", "d1", 1), ("q2", "d 2", 1)])
    with pytest.raises(DatasetError, match=r"test.tsv:3: document id 'd 2' contains a space"):
        load_dataset(files.dataset(tmp_path / "d", qrels=qrels))


def test_integer_ids_match_string_ids_everywhere(tmp_path, files):
    corpus = [{"_id": 10, "text": "a"}, {"_id": "11", "text": "b"}]
    queries = [{"_id": 7, "text": "x"}]
    ds = load_dataset(
        files.dataset(
            tmp_path / "d", files.jsonl(corpus), files.jsonl(queries), files.tsv([("7", "10", 1), ("7", "11", 0)])
        )
    )
    assert ds.doc_ids == ["10", "11"] and ds.query_ids == ["7"] and ds.qrels == {"7": {"10": 1, "11": 0}}


def test_duplicate_ids_after_conversion(tmp_path, files):
    corpus = files.jsonl([{"_id": 5, "text": "a"}, {"_id": " 5 ", "text": "b"}])
    with pytest.raises(DatasetError, match=r"corpus.jsonl:2: duplicate document id '5' \(first on line 1\)"):
        load_dataset(files.dataset(tmp_path / "d", corpus=corpus))
    queries = files.jsonl([{"_id": "q1", "text": "a"}, {"_id": "q2", "text": "b"}, {"_id": "q1", "text": "c"}])
    with pytest.raises(DatasetError, match=r"queries.jsonl:3: duplicate query id 'q1' \(first on line 1\)"):
        load_dataset(files.dataset(tmp_path / "e", queries=queries))


def test_qrels_naming_only_unknown_documents_say_documents(tmp_path, files):
    qrels = files.tsv([("q1", "MED-1", 1), ("q2", "MED-2", 1)])
    with pytest.raises(DatasetError) as err:
        load_dataset(files.dataset(tmp_path / "d", qrels=qrels))
    msg = str(err.value)
    assert "test.tsv: no query of split 'test' has a relevant" in msg
    assert "2 of 2 judgement(s) name document ids absent from" in msg and "corpus.jsonl" in msg
    assert "'MED-1' (line 2)" in msg and "has ids like 'd1', 'd2', 'd3'" in msg
    assert "query ids absent" not in msg


def test_qrels_naming_only_unknown_queries_say_queries(tmp_path, files):
    qrels = files.tsv([("Q1", "d1", 1), ("Q2", "d2", 1)])
    with pytest.raises(DatasetError) as err:
        load_dataset(files.dataset(tmp_path / "d", qrels=qrels))
    msg = str(err.value)
    assert "2 of 2 judgement(s) name query ids absent from" in msg and "queries.jsonl" in msg
    assert "'Q1' (line 2)" in msg and "has ids like 'q1', 'q2', 'q3'" in msg
    assert "document ids absent" not in msg


def test_all_judgements_not_relevant(tmp_path, files):
    with pytest.raises(DatasetError, match=r"every judgement has relevance <= 0"):
        load_dataset(files.dataset(tmp_path / "d", qrels=files.tsv([("q1", "d1", 0), ("q2", "d2", -1)])))


@pytest.mark.parametrize("raw, expected", [("1.0", 1), ("2.00", 2), (" 3 ", 3), ("0", 0)])
def test_integral_decimal_relevance_reads_as_integer(tmp_path, files, raw, expected):
    qrels = files.tsv([("q1", "d1", raw), ("q1", "d3", 1)])
    assert load_dataset(files.dataset(tmp_path / "d", qrels=qrels)).qrels["q1"] == {"d1": expected, "d3": 1}


@pytest.mark.parametrize("raw", ["1.5", "nan", "inf", "1e400", "high", "True"])
def test_non_integer_relevance_is_refused(tmp_path, files, raw):
    qrels = files.tsv([("q1", "d1", 1), ("q2", "d2", raw)])
    with pytest.raises(DatasetError, match=r"test.tsv:3: relevance .* is not an integer"):
        load_dataset(files.dataset(tmp_path / "d", qrels=qrels))


def test_negative_relevance_is_judged_not_relevant(tmp_path, files):
    root = files.dataset(tmp_path / "d")
    (root / "qrels" / "test.tsv").unlink()
    (root / "qrels" / "test.trec").write_text("q1 0 d1 2\nq1 0 d2 -2\nq2 0 d2 1\n")
    ds = load_dataset(root)
    assert ds.qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d2": 1}}
    assert ds.identity.n_negative_relevance == 1
    assert any("1 judgement(s) with negative relevance read as 0" in w for w in ds.warnings)


def test_three_column_qrels_without_header(tmp_path, files):
    with pytest.raises(DatasetError, match=r"test.tsv:1: 3-column qrels need a header row"):
        load_dataset(files.dataset(tmp_path / "d", qrels=b"q1\td1\t1\n"))


def test_bad_split_name(tmp_path, files):
    with pytest.raises(DatasetError, match=r"split '../x' is not a split name"):
        load_dataset(files.dataset(tmp_path / "d"), split="../x")


def test_header_names_say_which_column_is_which(tmp_path, files):
    qrels = b"corpus-id\tquery-id\tscore\nd1\tq1\t2\n"
    assert load_dataset(files.dataset(tmp_path / "d", qrels=qrels)).qrels == {"q1": {"d1": 2}}


def test_unrecognised_header_is_named(tmp_path, files):
    with pytest.raises(
        DatasetError,
        match=r"test.tsv:1: header row \['question', 'passage', 'grade'\] is not "
        r"recognised; name the columns 'query-id\\tcorpus-id\\tscore'",
    ):
        load_dataset(files.dataset(tmp_path / "d", qrels=b"question\tpassage\tgrade\nq1\td1\t1\n"))
