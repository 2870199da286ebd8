"""The reference encoder and the whole pipeline against an independent sentence-transformers path."""

import os

import numpy as np
import pytest

from evalsuite.datasets import load_dataset
from evalsuite.run.spec import RunSpec

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def st_model(bundled_model_dir):
    try:
        import sentence_transformers as st
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(
                "sentence-transformers is not installed; CI must run the agreement tests (pip install -e '.[test]')"
            )
        pytest.skip("sentence-transformers is not installed (pip install -e '.[test]')")
    return st.SentenceTransformer(str(bundled_model_dir), device="cpu")


def test_fp32_vectors_agree_with_sentence_transformers(st_model, minibeir_dir):
    from evalsuite.encode.local import LocalEncoder
    from evalsuite.model import resolve_model
    from evalsuite.retrieval.vectors import finalize

    ds = load_dataset(minibeir_dir)
    texts = list(ds.queries.values())[:40] + list(ds.corpus.values())[:160] + ["word " * 400]
    ours = finalize(LocalEncoder(resolve_model(None), device="cpu").encode(texts, poolings=["mean"])["mean"], 384, True)
    ref = st_model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    cos = (ours * ref).sum(axis=1)
    assert cos.min() >= 0.9999, f"min cosine {cos.min():.6f} at text {int(cos.argmin())}"


def test_run_matches_independent_st_faiss_ranx(st_model, minibeir_dir):
    import faiss
    from ranx import Qrels, Run, evaluate

    from evalsuite.run.pipeline import run

    metrics = ["ndcg@10", "recall@100", "mrr@10"]
    result = run(
        RunSpec(
            dataset=str(minibeir_dir),
            pooling="mean",
            max_length=256,
            device="cpu",
            metrics=tuple(metrics),
            use_cache=False,
        )
    )

    ds = load_dataset(minibeir_dir)
    st_model.max_seq_length = 256
    qids, dids = list(ds.queries), list(ds.corpus)
    q = st_model.encode([ds.queries[i] for i in qids], normalize_embeddings=True)
    d = st_model.encode([ds.corpus[i] for i in dids], normalize_embeddings=True)
    index = faiss.IndexFlatIP(d.shape[1])
    index.add(np.asarray(d, dtype=np.float32))
    scores, idx = index.search(np.asarray(q, dtype=np.float32), 100)
    run_dict = {qid: {dids[j]: float(s) for s, j in zip(scores[i], idx[i], strict=False)} for i, qid in enumerate(qids)}
    expected = evaluate(Qrels.from_dict({k: dict(v) for k, v in ds.qrels.items()}), Run.from_dict(run_dict), metrics)
    for m in metrics:
        assert abs(result.metrics[m] - expected[m]) <= 0.002, (m, result.metrics[m], expected[m])
    assert 0.2 < result.metrics["ndcg@10"] < 0.95  # the fixtures are hard enough to show regressions
