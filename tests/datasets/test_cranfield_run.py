"""A Cranfield-style dataset (gzip corpus, BOM qrels, empty documents) runs end to end on the tiny BERT, and its
metrics match an independent computation (numpy ranking, hand-written nDCG) on the same vectors."""

import math
from dataclasses import replace

import numpy as np
import pytest

from evalsuite.datasets import load_dataset
from evalsuite.run.pipeline import prepare, run
from evalsuite.run.spec import RunSpec

BOM = b"\xef\xbb\xbf"
CORPUS = [
    {"_id": 1, "title": "wings", "text": "lift on a wing in a propeller slipstream"},
    {"_id": 2, "title": "shear flow", "text": "boundary layer in simple shear flow past a flat plate"},
    {"_id": 471, "title": "", "text": ""},
    {"_id": 12, "title": "transition", "text": "boundary layer transition at supersonic speeds"},
    {"_id": 995, "title": "", "text": ""},
    {"_id": 184, "title": "heat", "text": "heat conduction in composite slabs"},
    {"_id": 7, "title": "buckling", "text": "buckling of thin cylindrical shells under axial load"},
]
QUERIES = [
    {"_id": 1, "text": "wing lift in a slipstream"},
    {"_id": 2, "text": "structural problems in flight"},
    {"_id": 3, "text": "heat conduction in slabs"},
    {"_id": 4, "text": "shell buckling"},
]
QRELS = b"query-id\tcorpus-id\tscore\r\n1\t1\t2\r\n1\t2\t1\r\n2\t471\t1\r\n2\t12\t1\r\n3\t184\t2\r\n4\t7\t1\r\n"


def _ndcg(ranked: list[str], rels: dict[str, int], k: int) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    return dcg / sum(r / math.log2(i + 2) for i, r in enumerate(ideal))


@pytest.fixture(scope="module", params=["keep", "skip"])
def cran_run(request, tmp_path_factory, files, tiny_model_dir):
    """The run on Cranfield-style data, and an independent ranking and metrics from its vectors (numpy)."""
    policy = request.param
    root = tmp_path_factory.mktemp("cran")
    files.write(root / "corpus.jsonl", files.jsonl(CORPUS), ".gz")
    files.write(root / "queries.jsonl", files.jsonl(QUERIES))
    files.write(root / "qrels" / "test.tsv", BOM + QRELS)
    spec = RunSpec(
        model=str(tiny_model_dir), dataset=str(root), device="cpu", use_cache=False, metrics=("ndcg@10", "recall@10")
    )
    prepared = prepare(spec)
    if policy == "skip":  # RunSpec has no empty_docs setting yet: load the skip variant here
        prepared = replace(prepared, dataset=load_dataset(root, empty_docs="skip"))
    result = run(spec, prepared)
    ds = result.dataset
    sims = result.query_vectors @ result.doc_vectors.T
    # the documented tie order: score descending, then document id descending
    ranked = {
        qid: [d for _, d in sorted(zip(sims[qi].round(5).tolist(), ds.doc_ids, strict=True), reverse=True)]
        for qi, qid in enumerate(ds.query_ids)
    }
    return policy, result, ranked


def test_cranfield_style_data_runs_with_empty_documents(cran_run):
    policy, result, ranked = cran_run
    ds = result.dataset
    assert len(ds.doc_ids) == (7 if policy == "keep" else 5)
    assert result.doc_vectors.shape[0] == len(ds.doc_ids)
    if policy == "keep":
        i, j = ds.doc_ids.index("471"), ds.doc_ids.index("995")
        np.testing.assert_array_equal(result.doc_vectors[i], result.doc_vectors[j])  # both are the empty string
    assert len(ds.query_ids) == 4
    assert ds.qrels["2"] == ({"471": 1, "12": 1} if policy == "keep" else {"12": 1})
    assert result.to_dict()["dataset"]["policies"]["empty_docs"] == policy
    for qid in ds.query_ids:  # the written ranking: by score, ties by document id descending
        assert list(result.ranking[qid]) == ranked[qid]


def test_cranfield_style_metrics_match_an_independent_computation(cran_run):
    _, result, ranked = cran_run
    ds = result.dataset
    ndcgs, recalls = [], []
    for qid in ds.query_ids:
        rels = ds.qrels[qid]
        ndcgs.append(_ndcg(ranked[qid], rels, 10))
        relevant = {d for d, r in rels.items() if r > 0}
        recalls.append(len(relevant & set(ranked[qid][:10])) / len(relevant))
    assert result.metrics["recall@10"] == pytest.approx(float(np.mean(recalls)), abs=1e-6)
    assert result.metrics["ndcg@10"] == pytest.approx(float(np.mean(ndcgs)), abs=1e-6)
