"""Chunked encode into a memory-mapped store and block-wise search give the in-memory run's ranking."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalsuite.base.errors import SpecError, StoreError
from evalsuite.encode.executors import Execution
from evalsuite.encode.store import VectorStore
from evalsuite.retrieval.search import search
from evalsuite.run.blocksearch import block_search
from evalsuite.run.pipeline import prepare, run
from evalsuite.run.spec import RunSpec


def ordered(ranking) -> dict[str, list[tuple[str, float]]]:
    return {q: list(ranking[q].items()) for q in ranking}


def test_blockwise_run_equals_in_memory_run(tiny_model_dir: Path, minibeir_dir: Path, tmp_path: Path) -> None:
    spec = RunSpec(model=str(tiny_model_dir), dataset=str(minibeir_dir), device="cpu", cache_dir=str(tmp_path / "c"))
    prepared = prepare(spec)
    memory = run(spec, prepared)
    n = len(prepared.dataset.doc_ids)
    # a warm cache serves the same vectors to both paths; chunks and blocks that do not divide the corpus
    blocked = run(spec, prepared, execution=Execution(chunk_size=7, block_rows=13, store_dir=tmp_path / "store"))
    assert n > 13 * 3
    assert ordered(blocked.ranking) == ordered(memory.ranking)
    assert blocked.metrics == memory.metrics and blocked.per_query == memory.per_query
    stored = VectorStore.open(tmp_path / "store" / "document-mean.npy").read()
    assert stored.shape == (n, 32) and np.abs(stored).sum(axis=1).min() > 0  # every row written
    assert blocked.doc_vectors is None


def test_chunked_encode_without_cache_gives_the_same_metrics(tiny_model_dir: Path, minibeir_dir: Path) -> None:
    spec = RunSpec(model=str(tiny_model_dir), dataset=str(minibeir_dir), device="cpu", use_cache=False)
    prepared = prepare(spec)
    memory = run(spec, prepared)
    blocked = run(spec, prepared, execution=Execution(chunk_size=5, block_rows=4))
    assert blocked.timing["documents"]["texts"] == len(prepared.dataset.doc_ids)
    assert blocked.timing["documents"]["batches"] >= len(prepared.dataset.doc_ids) // 5
    assert blocked.metrics == pytest.approx(memory.metrics, abs=1e-9)
    assert [list(blocked.ranking[q])[:10] for q in blocked.ranking] == [
        list(memory.ranking[q])[:10] for q in memory.ranking
    ]


@pytest.mark.parametrize("similarity", ["cosine", "dot", "l2"])
@pytest.mark.parametrize("block_rows", [1, 2, 3, 7, 64])
def test_block_search_keeps_the_tie_order_across_blocks(tmp_path: Path, similarity: str, block_rows: int) -> None:
    rng = np.random.default_rng(7)
    base = rng.normal(size=(6, 8)).astype(np.float32)
    # 30 documents, each one of 6 vectors: ties everywhere, spread over many blocks; ids not in corpus order
    docs = base[rng.integers(0, 6, size=30)]
    doc_ids = [f"d{(17 * i) % 31:02d}" for i in range(30)]
    queries = rng.normal(size=(5, 8)).astype(np.float32)
    qids = [f"q{i}" for i in range(5)]
    store = VectorStore.create(tmp_path / "v.npy", 30, 8)
    store.write(0, docs[:11])
    store.write(11, docs[11:])
    normalize = similarity == "cosine"
    if normalize:
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        ref_docs = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    else:
        ref_docs = docs
    for k in (1, 4, 10, 30):
        expected = search(queries, ref_docs, query_ids=qids, doc_ids=doc_ids, k=k, similarity=similarity)
        got = block_search(
            queries,
            store,
            query_ids=qids,
            doc_ids=doc_ids,
            k=k,
            similarity=similarity,
            dim=8,
            normalize=normalize,
            block_rows=block_rows,
        )
        assert ordered(got) == ordered(expected)
    # the test is about ties: the top 10 of a query holds tied documents from different blocks
    top = list(expected["q0"].items())[:10]
    scores = [s for _, s in top]
    assert len(set(scores)) < len(scores)


def test_block_search_matches_an_independent_oracle(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    docs = rng.normal(size=(500, 16)).astype(np.float32)
    queries = rng.normal(size=(25, 8)).astype(np.float32)
    doc_ids = [f"doc{i}" for i in range(500)]
    store = VectorStore.create(tmp_path / "v.npy", 500, 16)
    store.write(0, docs)
    got = block_search(
        queries,
        store,
        query_ids=[str(i) for i in range(25)],
        doc_ids=doc_ids,
        k=20,
        similarity="dot",
        dim=8,
        normalize=True,
        block_rows=37,
    )
    cut = docs[:, :8] / np.linalg.norm(docs[:, :8], axis=1, keepdims=True)
    exact = queries @ cut.T
    for qi in range(25):
        want = [doc_ids[j] for j in np.argsort(-exact[qi], kind="stable")[:20]]
        assert list(got[str(qi)]) == want
        assert list(got[str(qi)].values()) == pytest.approx(exact[qi][np.argsort(-exact[qi])[:20]], abs=1e-5)


def test_store_errors_are_typed(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create the vector store"):
        VectorStore.create(blocker / "sub" / "v.npy", 3, 2)
    store = VectorStore.create(tmp_path / "v.npy", 3, 2)
    with pytest.raises(StoreError, match="cannot write"):
        store.write(2, np.zeros((2, 2), np.float32))
    store.write(0, np.ones((3, 2), np.float32))
    assert store.read_block(1, 3).tolist() == [[1, 1], [1, 1]]
    with open(store.path, "r+b") as fh:  # a store cut short (disk full while writing, a copy interrupted)
        fh.truncate(store.path.stat().st_size - 4)
    with pytest.raises(StoreError, match="shorter than its header"):
        store.read_block(0, 3)
    with pytest.raises(SpecError, match="block size"):
        block_search(
            np.zeros((1, 2), np.float32),
            store,
            query_ids=["q"],
            doc_ids=["a", "b", "c"],
            k=1,
            similarity="dot",
            dim=2,
            normalize=False,
            block_rows=0,
        )
    with pytest.raises(SpecError, match="executor"):
        Execution(executor="spark")


def test_integrity_over_blocks_equals_integrity_over_the_whole() -> None:
    from evalsuite.retrieval.vectors import check_vector_blocks, check_vectors

    rng = np.random.default_rng(1)
    v = rng.normal(size=(50, 6)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    v[7] = 0.0
    v[23, 2] = np.nan
    v[41] *= 3
    whole = check_vectors(v, dim=6, normalized=True)
    blocks = check_vector_blocks((v[s : s + 9] for s in range(0, 50, 9)), dim=6, normalized=True)
    assert blocks == whole and (blocks.zero, blocks.non_finite, blocks.bad_norm) == ((7,), (23,), (41,))
