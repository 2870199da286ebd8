"""Two-stage evaluation on the bundled MiniLM and the fixture dataset (slow: the real model)."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.integration


def test_reranking_by_the_first_stage_own_similarity_changes_nothing(minibeir_dir, tmp_path):
    """A 'reranker' that scores a pair by the first stage's own cosine must reproduce the first stage: the gain is 0
    on every metric (a wrong pair/document mapping or a tie-order bug would move them)."""
    from evalsuite.rerank.run import run_first_stage
    from evalsuite.rerank.twostage import evaluate_depths
    from evalsuite.run.spec import RunSpec

    spec = RunSpec(dataset=str(minibeir_dir), device="cpu", cache_dir=str(tmp_path / "cache"))
    _, first = run_first_stage(spec, [20])
    ds = first.dataset
    qv = dict(zip(ds.query_ids, first.query_vectors, strict=True))
    dv = dict(zip(ds.doc_ids, first.doc_vectors, strict=True))
    by_text_q = {ds.queries[q]: qv[q] for q in ds.query_ids}
    by_text_d = {ds.corpus[d]: dv[d] for d in ds.doc_ids}

    def cosine(pairs, labels):
        return np.array([float(by_text_q[q] @ by_text_d[d]) for q, d in pairs])

    from evalsuite.rerank.contract import RerankerContract

    contract = RerankerContract(
        model="self", model_revision="-", tokenizer_revision="-", activation="none", template="pair", max_length=256
    )
    (r,) = evaluate_depths(first, contract, cosine, [20], list(first.metrics))
    for d in r.deltas:
        assert abs(d.delta) <= 0.002, d
        assert d.n_queries == len(ds.query_ids) > 100
    assert r.metrics["ndcg@10"] == pytest.approx(first.metrics["ndcg@10"], abs=0.002)
