"""Empty documents and queries: keep (default for documents, as BEIR/MTEB), skip (default for queries), error."""

import pytest

from evalsuite.base.errors import DatasetError, SpecError
from evalsuite.datasets import load_dataset

BOM = b"\xef\xbb\xbf"

# Cranfield-like: documents 471 and 995 have empty title and abstract, and 471 is judged relevant to query 2.
CRAN_CORPUS = [
    {
        "_id": 1,
        "title": "experimental investigation of the aerodynamics of a wing in a slipstream",
        "text": "an experimental study of a wing in a propeller slipstream was made",
    },
    {"_id": 2, "title": "simple shear flow past a flat plate", "text": "  the boundary layer in simple shear flow  "},
    {"_id": 471, "title": "", "text": ""},
    {"_id": 12, "title": "transition studies", "text": "boundary layer transition at supersonic speeds"},
    {"_id": 995, "title": None, "text": "   "},
    {"_id": 184, "title": "heat transfer", "text": ""},
]
CRAN_QUERIES = [
    {"_id": 1, "text": "what similarity laws must be obeyed when constructing aeroelastic models"},
    {"_id": 2, "text": "what are the structural and aeroelastic problems associated with flight"},
    {"_id": 3, "text": "what problems of heat conduction in composite slabs have been solved"},
]
CRAN_QRELS = b"query-id\tcorpus-id\tscore\r\n1\t1\t2\r\n1\t2\t1\r\n2\t471\t1\r\n2\t12\t0\r\n3\t184\t1\r\n3\t995\t0\r\n"


@pytest.fixture
def cranfield(tmp_path, files):
    root = tmp_path / "cranfield"
    files.write(root / "corpus.jsonl", files.jsonl(CRAN_CORPUS), ".gz")
    files.write(root / "queries.jsonl", files.jsonl(CRAN_QUERIES))
    files.write(root / "qrels" / "test.tsv", BOM + CRAN_QRELS)
    return root


def test_cranfield_like_loads_with_keep(cranfield):
    ds = load_dataset(cranfield)
    assert ds.doc_ids == ["1", "2", "471", "12", "995", "184"]
    assert ds.corpus["471"] == "" and ds.corpus["995"] == ""
    assert ds.corpus["2"] == "simple shear flow past a flat plate   the boundary layer in simple shear flow"
    assert ds.corpus["184"] == "heat transfer"  # title only: no trailing space (BEIR strips the joined text)
    assert ds.qrels == {"1": {"1": 2, "2": 1}, "2": {"471": 1, "12": 0}, "3": {"184": 1, "995": 0}}
    ident = ds.identity
    assert (ident.n_documents, ident.n_queries, ident.n_judgements) == (6, 3, 6)
    assert (ident.n_empty_documents, ident.empty_docs, ident.empty_queries) == (2, "keep", "skip")
    assert ident.to_dict()["policies"] == {"empty_docs": "keep", "empty_queries": "skip"}
    assert ident.manifest_dict()["empty_docs"] == "keep"
    assert set(ident.files) == {"corpus.jsonl.gz", "queries.jsonl", "qrels/test.tsv"}
    (w,) = [w for w in ds.warnings if "empty text" in w]
    assert "2 document(s) with empty text are encoded as the empty string" in w
    assert "line 3 ('471')" in w and "line 5 ('995')" in w and "--empty-docs skip" in w


def test_cranfield_like_skip_drops_documents_and_their_judgements(cranfield):
    ds = load_dataset(cranfield, empty_docs="skip")
    assert ds.doc_ids == ["1", "2", "12", "184"]
    assert ds.qrels == {"1": {"1": 2, "2": 1}, "3": {"184": 1}}  # query 2's only relevant document was empty
    ident = ds.identity
    assert ident.n_judgements_dropped_empty == 2 and ident.n_queries_dropped_empty_docs == 1
    assert ident.n_queries_dropped == 1 and ident.n_queries == 2
    assert any("1 of them because their relevant documents were empty and skipped" in w for w in ds.warnings)
    # keep and skip evaluate different data: the dataset identity says so
    assert ident.sha256 != load_dataset(cranfield).identity.sha256


def test_cranfield_like_error_names_file_and_line(cranfield):
    with pytest.raises(DatasetError, match=r"corpus.jsonl.gz:3: document '471' has empty title and text") as err:
        load_dataset(cranfield, empty_docs="error")
    assert err.value.line == 3


def test_policy_does_not_change_identity_without_empty_texts(tmp_path, files):
    root = files.dataset(tmp_path / "d")
    shas = {
        load_dataset(root, empty_docs=p, empty_queries=q).identity.sha256
        for p in ("keep", "skip", "error")
        for q in ("keep", "skip", "error")
    }
    assert len(shas) == 1


def test_every_document_empty_is_refused_whatever_the_policy(tmp_path, files):
    corpus = files.jsonl([{"_id": d["_id"], "title": "", "text": ""} for d in files.CORPUS])
    root = files.dataset(tmp_path / "d", corpus=corpus)
    for policy in ("keep", "skip"):
        with pytest.raises(
            DatasetError,
            match=r"corpus.jsonl: every document \(3\) has empty text; check that the "
            r"text field",
        ):
            load_dataset(root, empty_docs=policy)


def test_empty_queries_skipped_by_default_with_their_judgements(tmp_path, files):
    queries = files.jsonl([{"_id": "q1", "text": "wing lift"}, {"_id": "q2", "text": " "}, {"_id": "q3", "text": None}])
    ds = load_dataset(files.dataset(tmp_path / "d", queries=queries))
    assert ds.query_ids == ["q1"] and ds.qrels == {"q1": {"d1": 2}}
    ident = ds.identity
    assert (ident.n_empty_queries, ident.n_judgements_dropped_empty, ident.n_queries_file) == (2, 2, 3)
    assert ident.n_unknown_qrels == 0  # judgements of skipped queries are not "unknown ids"
    assert any("2 query(s) with empty text were skipped" in w and "line 2 ('q2')" in w for w in ds.warnings)


def test_empty_queries_keep_and_error(tmp_path, files):
    queries = files.jsonl(
        [{"_id": "q1", "text": "wing lift"}, {"_id": "q2", "text": ""}, {"_id": "q3", "text": "hypersonic heating"}]
    )
    root = files.dataset(tmp_path / "d", queries=queries)
    kept = load_dataset(root, empty_queries="keep")
    assert kept.queries["q2"] == "" and kept.query_ids == ["q1", "q2", "q3"]
    with pytest.raises(DatasetError, match=r"queries.jsonl:2: query 'q2' has empty text"):
        load_dataset(root, empty_queries="error")


def test_only_empty_queries_judged(tmp_path, files):
    queries = files.jsonl([{"_id": "q1", "text": ""}, {"_id": "q2", "text": ""}, {"_id": "q9", "text": "x"}])
    with pytest.raises(DatasetError, match=r"every judged query has empty text and was skipped"):
        load_dataset(files.dataset(tmp_path / "d", queries=queries, qrels=files.tsv([("q1", "d1", 1)])))


def test_relevant_documents_all_empty_and_skipped(tmp_path, files):
    corpus = files.jsonl([{"_id": "d1", "text": ""}, {"_id": "d2", "text": "x"}])
    with pytest.raises(DatasetError, match=r"every relevant document is empty and was skipped; use --empty-docs keep"):
        load_dataset(
            files.dataset(tmp_path / "d", corpus=corpus, qrels=files.tsv([("q1", "d1", 1)])), empty_docs="skip"
        )


def test_unknown_policy_is_a_spec_error(tmp_path, files):
    with pytest.raises(SpecError, match=r"empty_docs: 'drop' is not a policy; choose one of keep, skip, error"):
        load_dataset(files.dataset(tmp_path / "d"), empty_docs="drop")


def test_hf_saved_dataset_follows_the_same_policies(tmp_path):
    datasets = pytest.importorskip("datasets")
    dd = datasets.DatasetDict(
        {
            "corpus": datasets.Dataset.from_list(
                [{"_id": "1", "title": "t", "text": "a"}, {"_id": "2", "title": "", "text": ""}]
            ),
            "queries": datasets.Dataset.from_list([{"_id": "q", "text": "x"}]),
            "test": datasets.Dataset.from_list(
                [{"query-id": "q", "corpus-id": "2", "score": 1.0}, {"query-id": "q", "corpus-id": "1", "score": 1.0}]
            ),
        }
    )
    dd.save_to_disk(str(tmp_path / "hf"))
    ds = load_dataset(tmp_path / "hf")
    assert ds.corpus == {"1": "t a", "2": ""} and ds.identity.n_empty_documents == 1
    assert load_dataset(tmp_path / "hf", empty_docs="skip").qrels == {"q": {"1": 1}}
    with pytest.raises(DatasetError, match=r"corpus:2: document '2' has empty text"):
        load_dataset(tmp_path / "hf", empty_docs="error")
