"""Indexes on random vectors, checked against an independent brute-force numpy top-k."""

import numpy as np
import pytest

from evalsuite.retrieval.index.build import build, serialized_bytes
from evalsuite.retrieval.index.footprint import bytes_for, footprint
from evalsuite.retrieval.index.measure import evaluate_index, ranking_of
from evalsuite.retrieval.index.spec import parse_index, resolve
from evalsuite.retrieval.search import search

N, D, NQ = 3000, 64, 60
APPROXIMATE = (
    "hnsw:M=8,efc=16,ef=10",
    "ivf:nlist=32,nprobe=2",
    "ivfpq:nlist=16,nprobe=4,m=8,nbits=4",
    "sq8",
    "binary",
    "binary+rescore=40",
)


def _unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((20, D))
    docs = _unit(centres[rng.integers(0, 20, N)] + 0.8 * rng.standard_normal((N, D)))
    queries = _unit(centres[rng.integers(0, 20, NQ)] + 0.8 * rng.standard_normal((NQ, D)))
    qids = [f"q{i}" for i in range(NQ)]
    dids = [f"d{i:05d}" for i in range(N)]
    exact = search(queries, docs, query_ids=qids, doc_ids=dids, k=100, similarity="cosine")
    return queries, docs, qids, dids, exact


def _numpy_topk(queries, docs, k, similarity="cosine"):
    """Brute force, independent of FAISS: indices of the k best documents per query."""
    if similarity == "l2":
        scores = -((queries[:, None, :] - docs[None, :, :]) ** 2).sum(axis=2)
    else:
        scores = queries @ docs.T
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def _evaluate(data, text, k=10, **kw):
    queries, docs, qids, dids, exact = data
    return evaluate_index(
        parse_index(text),
        queries,
        docs,
        query_ids=qids,
        doc_ids=dids,
        similarity="cosine",
        k=k,
        exact=exact,
        latency_queries=20,
        **kw,
    )


def test_the_exact_search_is_the_numpy_top_k(data):
    queries, docs, qids, dids, exact = data
    top = _numpy_topk(queries, docs, 100)
    for qi, qid in enumerate(qids):
        assert list(exact[qid]) == [dids[j] for j in top[qi]]


def test_flat_has_recall_one_against_exact_and_returns_the_exact_ranking(data):
    run = _evaluate(data, "flat", k=100)
    assert dict(run.report.recall) == {10: 1.0, 100: 1.0}
    assert {q: list(r) for q, r in run.ranking.items()} == {q: list(r) for q, r in data[4].items()}


@pytest.mark.parametrize("text", APPROXIMATE)
def test_recall_against_exact_is_the_share_of_the_numpy_top_k_found(data, text):
    queries, docs, qids, dids, _ = data
    run = _evaluate(data, text, k=10, recall_ks=(10,))
    truth = _numpy_topk(queries, docs, 10)
    position = {d: i for i, d in enumerate(dids)}
    found = [len({position[d] for d in run.ranking[q]} & set(truth[qi])) / 10 for qi, q in enumerate(qids)]
    assert run.report.recall[10] == pytest.approx(float(np.mean(found)), abs=1e-12)
    assert 0.0 < run.report.recall[10] < 1.0  # measured, not assumed: each of these loses something here


def test_ivf_probing_every_list_is_exact(data):
    assert _evaluate(data, "ivf:nlist=32,nprobe=32").report.recall[10] == 1.0


def test_rescoring_finds_at_least_what_binary_found_and_everything_when_it_rescores_all(data):
    plain = _evaluate(data, "binary").report.recall[10]
    more = [_evaluate(data, f"binary+rescore={r}").report.recall[10] for r in (20, 100, 400)]
    assert plain <= more[0] <= more[1] <= more[2]
    assert more[2] > plain + 0.2
    assert _evaluate(data, f"binary+rescore={N}").report.recall[10] == 1.0


def test_l2_indexes_rank_by_negated_squared_distance(data):
    rng = np.random.default_rng(3)
    docs = (rng.standard_normal((500, 16)) * 3).astype(np.float32)
    queries = (rng.standard_normal((10, 16)) * 3).astype(np.float32)
    qids, dids = [f"q{i}" for i in range(10)], [f"d{i:03d}" for i in range(500)]
    exact = search(queries, docs, query_ids=qids, doc_ids=dids, k=20, similarity="l2")
    top = _numpy_topk(queries, docs, 20, "l2")
    for text in ("flat", "hnsw:M=16,ef=200", "sq8+rescore=100"):
        run = evaluate_index(
            parse_index(text),
            queries,
            docs,
            query_ids=qids,
            doc_ids=dids,
            similarity="l2",
            k=20,
            exact=exact,
            recall_ks=(20,),
            latency_queries=5,
        )
        assert run.report.recall[20] == 1.0, text
        for qi, q in enumerate(qids):
            assert list(run.ranking[q]) == [dids[j] for j in top[qi]], text
            d0 = dids.index(next(iter(run.ranking[q])))
            assert run.ranking[q][dids[d0]] == pytest.approx(-float(((queries[qi] - docs[d0]) ** 2).sum()), rel=1e-3)


@pytest.mark.parametrize("text", ["flat", "hnsw:M=16", "ivf:nlist=32", "ivfpq:nlist=32,m=8,nbits=4", "sq8", "binary"])
def test_the_memory_model_matches_what_faiss_serializes(data, text):
    docs = data[1]
    spec, _ = resolve(parse_index(text), N, D)
    built = build(spec, docs, "cosine")
    predicted = footprint(spec, D).total(N)
    assert serialized_bytes(built) == pytest.approx(predicted, rel=0.02), text


def test_bytes_for_one_million_vectors_use_the_requested_parameters():
    assert bytes_for(parse_index("flat"), 384) == 384 * 4 * 1_000_000
    assert bytes_for(parse_index("binary"), 384) == 48 * 1_000_000
    assert bytes_for(parse_index("binary"), 100) == 13 * 1_000_000  # 100 bits take 13 bytes
    assert bytes_for(parse_index("sq8"), 384) == 384 * 1_000_000 + 2 * 384 * 4
    pq = bytes_for(parse_index("ivfpq:nlist=1024,m=48,nbits=8"), 384)
    assert pq == (48 + 8) * 1_000_000 + 1024 * 384 * 4 + 256 * 384 * 4
    assert footprint(resolve(parse_index("binary+rescore=10"), 10, 384)[0], 384).rescore_bytes_per_vector == 1536


def test_the_report_times_single_queries_and_batches(data):
    report = _evaluate(data, "hnsw:M=8", batch_size=16).report
    assert report.query_latency.samples == 20 and report.batch_size == 16
    assert report.batch_latency.samples >= 5
    assert 0 < report.query_latency.p50_ms <= report.query_latency.p95_ms
    assert 0 < report.batch_latency.p50_ms <= report.batch_latency.p95_ms
    assert report.queries_per_second == pytest.approx(16 / (report.batch_latency.p50_ms / 1000))
    assert report.build_seconds > 0 and report.threads == 1 and report.device == "cpu"
    entry = report.manifest_entry()
    assert entry["type"] == "hnsw:M=8,efc=40,ef=64" and entry["dim"] == D and entry["vectors"] == N
    assert report.to_dict()["recall_vs_exact"].keys() == {"recall@10", "recall@100"}


def test_ranking_is_in_the_documented_tie_order_and_drops_missing_hits():
    scores = np.array([[0.5, 0.9, 0.5, -1.0]], dtype=np.float32)
    ids = np.array([[2, 0, 1, -1]])
    ranking = ranking_of(scores, ids, ["q"], ["a", "b", "c"], depth=4)
    assert list(ranking["q"].items()) == [("a", pytest.approx(0.9)), ("c", 0.5), ("b", 0.5)]  # ties: id descending
    assert ranking.depth == 4 and ranking.corpus_size == 3


def test_rescoring_in_small_blocks_gives_the_same_answer(data, monkeypatch):
    import evalsuite.retrieval.index.build as build_module

    queries, docs = data[0], data[1]
    built = build(resolve(parse_index("binary+rescore=50"), N, D)[0], docs, "cosine")
    whole = built.search(queries, 10)
    monkeypatch.setattr(build_module, "_GATHER_FLOATS", 3 * 50 * D)  # three queries per block
    blocks = built.search(queries, 10)
    assert np.array_equal(whole[1], blocks[1]) and np.allclose(whole[0], blocks[0])
    assert np.allclose(whole[0], np.take_along_axis(queries @ docs.T, whole[1], axis=1), atol=1e-5)
