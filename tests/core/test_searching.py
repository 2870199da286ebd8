"""The run's ranking step by step (:mod:`evalsuite.run.searching`): the strategy the inputs call for, each
strategy's ranking against a brute-force numpy top-k, and ``run()`` reading its metrics from the prepared spec."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.encode.store import VectorStore
from evalsuite.run.pipeline import Prepared, prepare, run
from evalsuite.run.searching import (
    rank,
    search_block_wise,
    search_in_memory,
    search_inputs,
    search_nothing,
    search_strategy,
)
from evalsuite.run.spec import RunSpec

METRICS = ("ndcg@10", "recall@10")


@pytest.fixture
def prepared(tiny_model_dir: Path, small_beir: Path) -> Prepared:
    return prepare(RunSpec(model=str(tiny_model_dir), dataset=str(small_beir), use_cache=False, metrics=METRICS))


def pooled(prepared: Prepared) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    dim = prepared.model.hidden_size
    q = rng.standard_normal((len(prepared.dataset.query_ids), dim)).astype(np.float32)
    d = rng.standard_normal((len(prepared.dataset.doc_ids), dim)).astype(np.float32)
    return q, d


def brute_top(prepared: Prepared, q: np.ndarray, d: np.ndarray, k: int) -> dict[str, list[str]]:
    """Cosine top ``k`` by numpy over the contract's dims (ties by doc id): the oracle of both exact strategies."""
    dim = prepared.contract.dim
    qn = q[:, :dim] / np.linalg.norm(q[:, :dim], axis=1, keepdims=True)
    dn = d[:, :dim] / np.linalg.norm(d[:, :dim], axis=1, keepdims=True)
    sims = qn.astype(np.float64) @ dn.astype(np.float64).T
    ids = prepared.dataset.doc_ids
    out = {}
    for i, qid in enumerate(prepared.dataset.query_ids):
        order = sorted(range(len(ids)), key=lambda j: (-round(float(sims[i, j]), 5), ids[j]))
        out[qid] = [ids[j] for j in order[:k]]
    return out


def test_each_strategy_ranks_as_the_brute_force_oracle(prepared: Prepared, tmp_path: Path) -> None:
    q, d = pooled(prepared)
    c = prepared.contract
    store = VectorStore.create(tmp_path / "docs.f32", rows=d.shape[0], dim=d.shape[1])
    store.write(0, d)
    expected = brute_top(prepared, q, d, 10)

    memory = search_inputs(prepared.dataset, c, q, d, METRICS)
    blocked = search_inputs(prepared.dataset, c, q, store, METRICS, block_rows=3)
    assert search_strategy(memory).func is search_in_memory  # type: ignore[attr-defined]
    assert search_strategy(blocked).func is search_block_wise  # type: ignore[attr-defined]
    for inputs in (memory, blocked):
        searched = search_strategy(inputs)()
        assert searched.ranking is not None
        assert {qid: list(ids) for qid, ids in searched.ranking.doc_ids.items()} == expected
    in_memory, block_wise = search_strategy(memory)(), search_strategy(blocked)()
    assert in_memory.doc_vectors is not None and in_memory.doc_integrity is None
    assert block_wise.doc_vectors is None and block_wise.doc_integrity is not None
    assert block_wise.research is not None and in_memory.research is not None
    deeper = block_wise.research(12)
    assert {qid: list(ids) for qid, ids in deeper.doc_ids.items()} == brute_top(prepared, q, d, 12)


def test_a_retriever_reading_no_vectors_searches_nothing(prepared: Prepared) -> None:
    bm25 = prepared.contract.replace(retrieval="bm25")
    inputs = search_inputs(prepared.dataset, bm25, None, None, METRICS)
    assert inputs.queries is None and search_strategy(inputs) is search_nothing
    ranked = rank(prepared, inputs)
    assert ranked.searched.ranking is None and ranked.retrieved is not None
    assert ranked.ranking is ranked.retrieved.ranking


def test_missing_vectors_are_refused_when_the_retriever_reads_them(prepared: Prepared) -> None:
    q, _ = pooled(prepared)
    with pytest.raises(SpecError, match="searches the contract's vectors, and none were given"):
        search_inputs(prepared.dataset, prepared.contract, q, None, METRICS)


def test_run_reads_its_metrics_from_the_prepared_spec(prepared: Prepared) -> None:
    other = prepared.spec.replace(metrics=("mrr@10",))
    result = run(other, prepared)
    assert set(result.metrics) == set(METRICS)
