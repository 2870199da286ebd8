"""Metadata fields of queries and documents are kept in the Dataset (what slices group by)."""

from evalsuite.datasets import load_dataset
from evalsuite.datasets.records import metadata


def test_metadata_keeps_scalars_and_one_nested_level():
    obj = {
        "_id": "q1",
        "text": "t",
        "title": "x",
        "topic": "finance",
        "year": 2020,
        "gold": True,
        "score": 0.5,
        "tags": ["a", "b"],
        "none": None,
        "metadata": {"url": "u", "deep": {"x": 1}},
    }
    assert metadata(obj) == {"topic": "finance", "year": "2020", "gold": "true", "score": "0.5", "metadata.url": "u"}


def test_beir_fields_follow_the_kept_queries_and_documents(make_beir, tmp_path):
    root = make_beir(
        tmp_path / "d",
        [{"_id": "d1", "title": "", "text": "a", "domain": "legal"}, {"_id": "d2", "text": "b"}],
        [
            {"_id": "q1", "text": "x", "topic": "t1"},
            {"_id": "q2", "text": "y", "topic": "t2"},
            {"_id": "q3", "text": "z"},
        ],
        [("q1", "d1", 1), ("q3", "d2", 1), ("q2", "d1", 0)],
    )
    ds = load_dataset(root)
    assert ds.query_fields == {"q1": {"topic": "t1"}}  # q2 has no relevant document and is dropped; q3 has no field
    assert ds.doc_fields == {"d1": {"domain": "legal"}}


def test_the_fixture_queries_carry_their_topic(minibeir_dir):
    ds = load_dataset(minibeir_dir)
    assert len(ds.query_fields) == 190
    counts: dict[str, int] = {}
    for f in ds.query_fields.values():
        counts[f["topic"]] = counts.get(f["topic"], 0) + 1
    # the datasheet's table: queries per topic of their top-graded passage
    assert counts == {
        "databases": 24,
        "cooking": 18,
        "astronomy": 17,
        "sports": 19,
        "gardening": 18,
        "finance": 19,
        "networking": 20,
        "physiology": 16,
        "music": 17,
        "railways": 22,
    }


def test_hf_saved_dataset_keeps_its_extra_columns(tmp_path):
    import pytest

    datasets = pytest.importorskip("datasets")
    dd = datasets.DatasetDict(
        {
            "corpus": datasets.Dataset.from_list(
                [
                    {"_id": "d1", "title": "", "text": "a", "domain": "legal"},
                    {"_id": "d2", "title": "", "text": "b", "domain": "medical"},
                ]
            ),
            "queries": datasets.Dataset.from_list(
                [{"_id": "q1", "text": "x", "topic": "t1"}, {"_id": "q2", "text": "y", "topic": "t2"}]
            ),
            "test": datasets.Dataset.from_list(
                [{"query-id": "q1", "corpus-id": "d1", "score": 1}, {"query-id": "q2", "corpus-id": "d2", "score": 2}]
            ),
        }
    )
    dd.save_to_disk(str(tmp_path / "hf"))
    ds = load_dataset(tmp_path / "hf")
    assert ds.query_fields == {"q1": {"topic": "t1"}, "q2": {"topic": "t2"}}
    assert ds.doc_fields == {"d1": {"domain": "legal"}, "d2": {"domain": "medical"}}
