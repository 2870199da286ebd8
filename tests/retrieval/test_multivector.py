"""The multivector retriever (late interaction as a retriever) end to end on a tiny random BERT and a small dataset,
against a brute-force MaxSim computed here from transformers' hidden states (the contract's rendered texts, the
special tokens dropped, BGE-M3's colbert_linear.pt applied when the model has one, each token L2-normalised):
the first stage over the whole corpus, the re-ranking of the dense run's top N (then the dense run's remaining
documents), and a hybrid fusing it with dense by RRF."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalsuite.retrieval.search import Ranking, tie_order_key
from evalsuite.run.pipeline import prepare, run
from evalsuite.run.spec import RunSpec
from evalsuite.testing.tiny_bert import WORDS

from .test_fusion import _ordered, _rrf

METRICS = ("ndcg@10", "recall@20")
K = 37  # the search depth covers the small corpus: every document is ranked


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory: pytest.TempPathFactory, make_beir) -> Path:
    rng = np.random.default_rng(3)
    words = sorted(set(WORDS))
    docs = [{"_id": f"d{j:02d}", "text": " ".join(rng.choice(words, size=rng.integers(3, 12)))} for j in range(36)]
    docs.append({"_id": "d99", "text": docs[4]["text"]})  # the same text as d04: an exact tie, id order decides
    queries = [{"_id": f"q{i}", "text": " ".join(rng.choice(words, size=rng.integers(2, 5)))} for i in range(8)]
    qrels = [(q["_id"], docs[int(rng.integers(0, 36))]["_id"], 1) for q in queries]
    return make_beir(tmp_path_factory.mktemp("mv"), docs, queries, qrels)


@pytest.fixture(scope="module", params=["hidden", "colbert_linear"])
def model_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, make_tiny_bert) -> Path:
    import torch

    path = make_tiny_bert(tmp_path_factory.mktemp("mv-model") / "m")
    if request.param == "colbert_linear":  # as BGE-M3 ships it: Linear(hidden, dim) beside the transformer
        torch.manual_seed(5)
        linear = torch.nn.Linear(32, 16)
        torch.save(linear.state_dict(), path / "colbert_linear.pt")
    return path


def _spec(model_dir: Path, dataset: Path, retrieval: str) -> RunSpec:
    return RunSpec(
        model=str(model_dir), dataset=str(dataset), device="cpu", metrics=METRICS, use_cache=False, retrieval=retrieval
    )


kept: dict[Path, tuple[float, int]] = {}  # the oracle's mean kept tokens per document and token dimension


def _oracle(model_dir: Path, dataset: Path) -> dict[str, dict[str, float]]:
    """MaxSim of every (query, document) pair, from the hidden states by plain loops."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    prepared = prepare(_spec(model_dir, dataset, "dense"))
    info, ds, contract = prepared.model, prepared.dataset, prepared.contract
    tok = AutoTokenizer.from_pretrained(str(info.tokenizer_path))
    model = AutoModel.from_pretrained(str(info.path)).eval()
    linear = model_dir / "colbert_linear.pt"
    state = torch.load(linear, weights_only=True) if linear.is_file() else None

    def tokens(text: str) -> list[np.ndarray]:
        enc = tok(text, truncation=True, max_length=contract.max_length, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**enc).last_hidden_state[0]
        if state is not None:
            hidden = hidden @ state["weight"].T + state["bias"]
        kept = []
        for token, h in zip(enc["input_ids"][0].tolist(), hidden.double().numpy(), strict=True):
            if token not in tok.all_special_ids:
                kept.append(h / np.linalg.norm(h))
        return kept

    q_tokens = {q: tokens(contract.render("query", ds.queries[q])) for q in ds.query_ids}
    d_tokens = {d: tokens(contract.render("document", ds.corpus[d])) for d in ds.doc_ids}
    kept[model_dir] = (float(np.mean([len(t) for t in d_tokens.values()])), len(next(iter(d_tokens.values()))[0]))
    return {
        q: {d: sum(max(float(qi @ dj) for dj in dt) for qi in qt) if dt else 0.0 for d, dt in d_tokens.items()}
        for q, qt in q_tokens.items()
    }


def _check(ranking: Ranking, want: dict[str, list[tuple[str, float]]], scores: dict[str, dict[str, float]]) -> None:
    for q, hits in want.items():
        got = ranking.doc_ids[q]
        assert len(got) == len(hits), q
        # the same documents in the same order, up to pairs whose float32 and float64 scores tie within 1e-5
        np.testing.assert_allclose([scores[q][d] for d in got], [scores[q][d] for d, _ in hits], atol=1e-5)
        assert got[: len(hits)] == tuple(d for d, _ in hits) or all(
            abs(scores[q][a] - scores[q][b]) < 1e-5 for a, (b, _) in zip(got, hits, strict=True) if a != b
        ), q


def test_multivector_ranks_by_maxsim_first_stage_and_reranking(model_dir: Path, small_dataset: Path) -> None:
    oracle = _oracle(model_dir, small_dataset)
    first = run(_spec(model_dir, small_dataset, "multivector"))
    assert first.contract.retrieval == "multivector:rerank=0,projection=auto,specials=drop"
    assert first.ranking.depth == K
    held = first.manifest["retrieval"]["multivector"]  # float32 token matrices: tokens x dim x 4 bytes a document
    tokens, dim = kept[model_dir]
    assert held["tokens_per_document"] == pytest.approx(tokens, abs=0.01)
    assert held["index_bytes_per_document"] == pytest.approx(4 * dim * tokens, rel=1e-3)
    _check(first.ranking, _ordered(oracle, K), oracle)
    for q, docs in first.ranking.doc_ids.items():  # its scores are the MaxSim scores
        np.testing.assert_allclose(first.ranking.scores[q], [oracle[q][d] for d in docs], rtol=1e-5, atol=1e-5)
    if not (model_dir / "colbert_linear.pt").is_file():  # the tied twin documents: d99 before d04 (id descending)
        for docs in first.ranking.doc_ids.values():
            if "d04" in docs and "d99" in docs:
                assert docs.index("d99") == docs.index("d04") - 1

    dense = run(_spec(model_dir, small_dataset, "dense"))
    reranked = run(_spec(model_dir, small_dataset, "multivector:rerank=5"))
    assert reranked.manifest["retrieval"]["multivector_rerank"] == 5
    for q, docs in dense.ranking.doc_ids.items():
        head = sorted(((d, oracle[q][d]) for d in docs[:5]), key=lambda h: tie_order_key(*h))
        want = [d for d, _ in head] + list(docs[5:K])
        got = reranked.ranking.doc_ids[q]
        assert len(got) == K and got[5:] == tuple(want[5:]), q  # the dense run's tail, in its order
        assert set(got[:5]) == set(want[:5]), q
        np.testing.assert_allclose(sorted((oracle[q][d] for d in got[:5]), reverse=True), [s for _, s in head])
        assert [oracle[q][d] for d in got[:5]] == sorted((oracle[q][d] for d in got[:5]), reverse=True)


def test_maxsim_search_keeps_the_top_k_in_the_tie_order() -> None:
    from evalsuite.retrieval.maxsim import maxsim_search

    rng = np.random.default_rng(0)
    docs = [rng.normal(size=(int(n), 4)).astype(np.float32) for n in rng.integers(0, 5, size=30)]
    docs[9] = docs[2]  # a tie: d9 before d2 (id descending)
    queries = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(4)]
    doc_ids = [f"d{j}" for j in range(30)]
    got = maxsim_search(queries, docs, query_ids=list("abcd"), doc_ids=doc_ids, k=7, block_tokens=5)
    for qid, q in zip("abcd", queries, strict=True):
        brute = {
            d: sum(max(float(qi @ dj) for dj in m) for qi in q) if len(m) else 0.0
            for d, m in zip(doc_ids, docs, strict=True)
        }
        want = _ordered({qid: brute}, 7)[qid]
        assert got.doc_ids[qid] == tuple(d for d, _ in want)
        np.testing.assert_allclose(got.scores[qid], [s for _, s in want], rtol=1e-5)


def test_hybrid_fuses_multivector_with_dense_by_rrf(tiny_model_dir: Path, small_dataset: Path) -> None:
    dense = run(_spec(tiny_model_dir, small_dataset, "dense"))
    late = run(_spec(tiny_model_dir, small_dataset, "multivector"))
    hybrid = run(_spec(tiny_model_dir, small_dataset, "hybrid:fuse=dense+multivector,k=10"))
    for q, hits in _ordered(_rrf([dense.ranking, late.ranking], 10), K).items():
        assert hybrid.ranking.doc_ids[q] == tuple(d for d, _ in hits), q
    entry = json.loads(json.dumps(hybrid.manifest["retrieval"]))
    assert entry["fuse"] == ["dense", "multivector"] and entry["multivector_projection"] == "auto"
    assert entry["components"]["multivector"] == pytest.approx(late.metrics, abs=1e-6)
