"""The reference encoder equals sentence-transformers (the oracle) on every model family it accepts: per-text
cosine >= 0.99999 in fp32 for queries and documents with the family's prompts, the same vector for a text alone
and inside a long padded batch, and the same metrics from the whole pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from evalsuite.contract import Contract, build_contract
from evalsuite.datasets import load_dataset
from evalsuite.encode.contract_encoder import ContractEncoder
from evalsuite.encode.local import LocalEncoder
from evalsuite.model import resolve_model
from evalsuite.run.spec import RunSpec
from evalsuite.testing.tiny_families import FAMILIES, Family

from .conftest import TEXTS

MIN_COSINE = 0.99999


def oracle_prompt(family: Family, role: str) -> dict[str, str]:
    """The keyword that makes sentence-transformers apply the prompt evalsuite applies to ``role``."""
    if role == "query":
        return {"prompt_name": "query"} if "query" in family.prompts else {"prompt": ""}
    name = family.doc_prompt_name or ("document" if "document" in family.prompts else None)
    if name is None and family.default_prompt_name is not None:
        return {}  # no prompt named: sentence-transformers' encode applies default_prompt_name
    return {"prompt_name": name} if name else {"prompt": ""}


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    return np.asarray((a * b).sum(axis=1) / np.maximum(na * nb, 1e-30))


def ours(family_dir, name: str, batch_size: int = 64) -> tuple[ContractEncoder, Contract]:
    info = resolve_model(str(family_dir(name)))
    contract = build_contract(RunSpec(model=str(family_dir(name))), info)
    return ContractEncoder(LocalEncoder(info, device="cpu", batch_size=batch_size), contract), contract


@pytest.mark.parametrize("name", list(FAMILIES))
def test_vectors_equal_sentence_transformers(name, family_dir, st_oracle):
    family = FAMILIES[name]
    encoder, contract = ours(family_dir, name)
    st = st_oracle(family_dir(name))
    assert contract.pooling == family.pooling and contract.normalize is family.normalize
    for role in ("query", "document"):
        got = encoder.embed(TEXTS, role)
        ref = st.encode(TEXTS, batch_size=8, convert_to_numpy=True, **oracle_prompt(family, role))
        assert got.shape == ref.shape
        cos = cosines(got, ref)
        assert cos.min() >= MIN_COSINE, f"{name} {role}: min cosine {cos.min():.7f} at text {int(cos.argmin())}"
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), np.linalg.norm(ref, axis=1), rtol=1e-4, atol=1e-6)
        encoder.encoder.batch_size = 1  # type: ignore[attr-defined]  # each text in its own batch: no padding
        single = encoder.embed(TEXTS, role)
        encoder.encoder.batch_size = 64  # type: ignore[attr-defined]
        cos = cosines(single, got)
        assert cos.min() >= MIN_COSINE, f"{name} {role}: alone vs batched, min cosine {cos.min():.7f}"


# bge is left out: a random BERT's CLS vectors nearly coincide (cosine 0.99999 between any two), so ranks are ties
@pytest.mark.parametrize("name", ["qwen3", "xlmr", "dense", "mean_sqrt_len"])
def test_metrics_equal_sentence_transformers(name, family_dir, st_oracle, family_dataset):
    import faiss
    from ranx import Qrels, Run, evaluate

    from evalsuite.run.pipeline import run

    family = FAMILIES[name]
    metrics = ["ndcg@10", "recall@10", "mrr@10"]
    result = run(
        RunSpec(
            model=str(family_dir(name)),
            dataset=str(family_dataset),
            device="cpu",
            metrics=tuple(metrics),
            use_cache=False,
        )
    )
    ds = load_dataset(family_dataset)
    st = st_oracle(family_dir(name))
    qids, dids = list(ds.queries), list(ds.corpus)
    q = st.encode([ds.queries[i] for i in qids], convert_to_numpy=True, **oracle_prompt(family, "query"))
    d = st.encode([ds.corpus[i] for i in dids], convert_to_numpy=True, **oracle_prompt(family, "document"))
    index = faiss.IndexFlatIP(d.shape[1])
    index.add(np.ascontiguousarray(d, dtype=np.float32))
    scores, idx = index.search(np.ascontiguousarray(q, dtype=np.float32), 10)
    run_dict = {qid: {dids[j]: float(s) for s, j in zip(scores[i], idx[i], strict=True)} for i, qid in enumerate(qids)}
    expected = evaluate(Qrels.from_dict({k: dict(v) for k, v in ds.qrels.items()}), Run.from_dict(run_dict), metrics)
    for m in metrics:
        assert result.metrics[m] == pytest.approx(expected[m], abs=1e-9), (name, m)


def test_one_forward_pass_serves_every_pooling(family_dir):
    """Six poolings (and a Dense head) from one forward pass per batch, each equal to its own run."""
    from evalsuite.contract import POOLINGS

    info = resolve_model(str(family_dir("dense")))
    enc = LocalEncoder(info, device="cpu", batch_size=4)
    calls = []
    forward = enc.model.forward
    enc.model.forward = lambda *a, **k: calls.append(1) or forward(*a, **k)
    together = enc.encode(TEXTS, poolings=list(POOLINGS))
    assert len(calls) == enc.stats_by_role["document"].batches == -(-len(TEXTS) // 4)
    for p in POOLINGS:
        alone = LocalEncoder(info, device="cpu", batch_size=4).encode(TEXTS, poolings=[p])[p]
        np.testing.assert_allclose(together[p], alone, rtol=1e-5, atol=1e-6)
        assert together[p].shape == (len(TEXTS), info.hidden_size)
    assert not np.allclose(together["mean"], together["weightedmean"])  # the poolings really differ
    assert not np.allclose(together["max"], together["mean"])


def test_default_prompt_name_applies_to_a_role_without_its_own_prompt(family_dir, st_oracle):
    """Documents of a model declaring no document prompt but a default_prompt_name get the default prompt, as
    sentence-transformers' encode gives them (its 6.x encode_document does not: its implicit empty 'document'
    prompt comes first); queries keep their own 'query' prompt. The contract records both names."""
    from evalsuite.testing.tiny_families import RETRIEVAL_PROMPT

    encoder, contract = ours(family_dir, "default_prompt")
    assert (contract.doc_prompt, contract.doc_prefix) == ("retrieval", RETRIEVAL_PROMPT)
    assert contract.query_prompt == "query" and contract.to_dict()["doc_prompt"] == "retrieval"
    st = st_oracle(family_dir("default_prompt"))
    assert st.default_prompt_name == "retrieval"
    docs = encoder.embed(TEXTS, "document")
    assert cosines(docs, st.encode(TEXTS, convert_to_numpy=True)).min() >= MIN_COSINE
    assert cosines(docs, st.encode(TEXTS, prompt_name="retrieval", convert_to_numpy=True)).min() >= MIN_COSINE
    bare = st.encode(TEXTS, prompt="", convert_to_numpy=True)  # what ignoring the default would give
    assert cosines(docs, bare).min() < 0.999
    assert cosines(st.encode_document(TEXTS, convert_to_numpy=True), bare).min() >= MIN_COSINE  # 6.x's divergence
    queries = encoder.embed(TEXTS, "query")
    assert cosines(queries, st.encode_query(TEXTS, convert_to_numpy=True)).min() >= MIN_COSINE
