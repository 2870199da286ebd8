import json

import pytest

from evalsuite.base.errors import DatasetError
from evalsuite.datasets import load_dataset


def test_loads_small_beir_and_counts(small_beir):
    ds = load_dataset(small_beir)
    assert ds.doc_ids == ["d1", "d2", "d3", "d4", "d5", "d6"]
    assert ds.corpus["d1"] == "Databases A transaction commit makes every write durable."
    assert ds.corpus["d2"] == "Rollback undoes the writes of a failed transaction."
    assert ds.query_ids == ["q1", "q2", "q3"]  # q4 has only a 0 judgement
    assert ds.qrels["q1"] == {"d1": 2, "d2": 1}
    ident = ds.identity
    assert ident.n_queries_dropped == 1 and ident.n_queries_file == 4
    assert ident.n_unknown_qrels == 0
    assert len(ident.sha256) == 64
    assert set(ident.files) == {"corpus.jsonl", "queries.jsonl", "qrels/test.tsv"}
    assert any("dropped" in w for w in ds.warnings)


def test_sha256_changes_with_content(small_beir):
    before = load_dataset(small_beir).identity.sha256
    with open(small_beir / "corpus.jsonl", "a") as fh:
        fh.write(json.dumps({"_id": "d7", "text": "one more"}) + "\n")
    assert load_dataset(small_beir).identity.sha256 != before


def _corrupt_line(path, lineno, new):
    lines = path.read_text().splitlines()
    lines[lineno - 1] = new
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"_id": "d3", "text": "broken', "invalid JSON"),
        ('{"title": "t", "text": "no id"}', "missing field '_id'"),
        ('{"_id": "d1", "text": "again"}', "duplicate document id 'd1'"),
        ('["not", "an", "object"]', "expected a JSON object"),
    ],
)
def test_corpus_errors_name_file_and_line(small_beir, line, message):
    _corrupt_line(small_beir / "corpus.jsonl", 3, line)
    with pytest.raises(DatasetError) as err:
        load_dataset(small_beir, empty_docs="error")
    assert "corpus.jsonl:3: " in str(err.value)
    assert message in str(err.value)
    assert err.value.line == 3


def test_empty_document_refused_under_error_policy(small_beir):
    _corrupt_line(small_beir / "corpus.jsonl", 3, '{"_id": "d3", "title": "", "text": "  "}')
    with pytest.raises(DatasetError, match=r"corpus.jsonl:3: document 'd3' has empty title and text") as err:
        load_dataset(small_beir, empty_docs="error")
    assert err.value.line == 3


def test_query_errors(small_beir):
    _corrupt_line(small_beir / "queries.jsonl", 2, '{"_id": "q9", "text": ""}')
    with pytest.raises(DatasetError, match=r"queries.jsonl:2: query 'q9' has empty text"):
        load_dataset(small_beir, empty_queries="error")


def test_non_integer_relevance(small_beir):
    _corrupt_line(small_beir / "qrels" / "test.tsv", 3, "q1\td2\thigh")
    with pytest.raises(DatasetError, match=r"test.tsv:3: relevance 'high' is not an integer"):
        load_dataset(small_beir)


def test_duplicate_judgement(small_beir):
    with open(small_beir / "qrels" / "test.tsv", "a") as fh:
        fh.write("q1\td1\t1\n")
    with pytest.raises(DatasetError, match="duplicate judgement for query 'q1', document 'd1'"):
        load_dataset(small_beir)


def test_unknown_ids_are_counted_warnings(small_beir):
    with open(small_beir / "qrels" / "test.tsv", "a") as fh:
        fh.write("q2\tghost\t1\nq-ghost\td1\t1\n")
    ds = load_dataset(small_beir)
    assert ds.identity.n_unknown_qrels == 2
    (w,) = [w for w in ds.warnings if "ignored judgements" in w]
    assert "1 of 8 judgement(s) name query ids absent from" in w and "'q-ghost' (line 9)" in w
    assert "1 of 8 judgement(s) name document ids absent from" in w and "'ghost' (line 8)" in w


def test_missing_split_lists_present_ones(small_beir):
    with pytest.raises(DatasetError, match=r"no qrels for split 'dev'; splits present: \['test'\]"):
        load_dataset(small_beir, split="dev")


def test_trec_qrels(small_beir):
    (small_beir / "qrels" / "test.tsv").unlink()
    (small_beir / "qrels" / "test.trec").write_text("q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 1\n")
    ds = load_dataset(small_beir)
    assert ds.qrels == {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 1}}
    assert "qrels/test.trec" in ds.identity.files


def test_trec_qrels_bad_columns(small_beir, tmp_path):
    bad = tmp_path / "bad.qrels"
    bad.write_text("q1 0 d1 2\nq1 d2 1\n")
    with pytest.raises(DatasetError, match=r"bad.qrels:2: expected TREC qrels"):
        load_dataset(small_beir, qrels=bad)


def test_missing_corpus_file(tmp_path):
    (tmp_path / "x").mkdir()
    with pytest.raises(DatasetError, match=r"corpus.jsonl: file not found \(nor corpus.jsonl.gz"):
        load_dataset(tmp_path / "x")


def test_hf_saved_dataset_matches_beir(small_beir, tmp_path):
    datasets = pytest.importorskip("datasets")
    beir = load_dataset(small_beir)
    rows = [json.loads(x) for x in (small_beir / "corpus.jsonl").read_text().splitlines()]
    queries = [json.loads(x) for x in (small_beir / "queries.jsonl").read_text().splitlines()]
    qrels = [x.split("\t") for x in (small_beir / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    dd = datasets.DatasetDict(
        {
            "corpus": datasets.Dataset.from_list(rows),
            "queries": datasets.Dataset.from_list(queries),
            "test": datasets.Dataset.from_list([{"query-id": q, "corpus-id": d, "score": int(s)} for q, d, s in qrels]),
        }
    )
    dd.save_to_disk(str(tmp_path / "hf"))
    hf = load_dataset(tmp_path / "hf")
    assert hf.identity.format == "hf-disk"
    assert dict(hf.corpus) == dict(beir.corpus)
    assert dict(hf.queries) == dict(beir.queries)
    assert hf.qrels == beir.qrels


def test_fixture_dataset_meets_its_datasheet(minibeir_dir):
    ds = load_dataset(minibeir_dir)
    ident = ds.identity
    assert ident.n_documents >= 300
    assert ident.n_queries >= 60
    grades = {r for q in ds.qrels.values() for r in q.values()}
    assert max(grades) >= 2
    assert ident.n_unknown_qrels == 0
