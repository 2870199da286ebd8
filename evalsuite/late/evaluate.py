"""Late-interaction re-ranking of the first stage's top N by MaxSim, with the memory it costs per document.

Quality: both stages' metrics and the gain with its uncertainty (the two-stage machinery of
:mod:`evalsuite.rerank.twostage`, with MaxSim as the pair scorer). Memory: each candidate document's kept
tokens x dim x bytes of the storage dtype; mean, median, max and the corpus total (what an index of
every document would hold), beside a single-vector index's bytes per document for comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..base.errors import SpecError
from ..encode.late_contract import BYTES_PER_VALUE, LateContract
from ..rerank.twostage import TwoStageResult, evaluate_depths, top_ids
from ..retrieval.maxsim import maxsim_many

if TYPE_CHECKING:
    from ..encode.tokens import TokenEncoder
    from ..run.result import Result


@dataclass(frozen=True)
class MemoryReport:
    documents: int
    dim: int
    storage_dtype: str
    bytes_per_token: int
    tokens_mean: float
    tokens_max: int
    bytes_mean: float
    bytes_median: float
    bytes_max: int
    corpus_bytes_estimate: float
    single_vector_bytes: int  # one first-stage vector per document, float32, for comparison

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)

    def describe(self) -> str:
        return (
            f"{self.tokens_mean:.1f} tokens x {self.dim} x {BYTES_PER_VALUE[self.storage_dtype]} B = "
            f"{self.bytes_mean / 1024:.1f} KiB per document on average (max {self.bytes_max / 1024:.1f} KiB); "
            f"{self.bytes_mean / max(1, self.single_vector_bytes):.0f}x a single {self.single_vector_bytes} B "
            f"vector; ~{self.corpus_bytes_estimate / 2**20:.2f} MiB for the corpus"
        )


def memory_report(
    doc_tokens: Sequence[np.ndarray], contract: LateContract, n_corpus: int, single_dim: int
) -> MemoryReport:
    if not doc_tokens:
        raise SpecError("no documents were encoded; the memory per document is undefined")
    counts = np.array([len(m) for m in doc_tokens], dtype=np.int64)
    per_token = contract.bytes_per_token()
    sizes = counts * per_token
    return MemoryReport(
        documents=len(counts),
        dim=contract.dim,
        storage_dtype=contract.storage_dtype,
        bytes_per_token=per_token,
        tokens_mean=float(counts.mean()),
        tokens_max=int(counts.max()),
        bytes_mean=float(sizes.mean()),
        bytes_median=float(np.median(sizes)),
        bytes_max=int(sizes.max()),
        corpus_bytes_estimate=float(sizes.mean() * n_corpus),
        single_vector_bytes=4 * single_dim,
    )


@dataclass
class LateResult:
    contract: LateContract
    stages: list[TwoStageResult]
    memory: MemoryReport

    def to_dict(self) -> dict[str, object]:
        return {
            "late_contract": self.contract.to_dict(),
            "fingerprint": self.contract.fingerprint(),
            "memory": self.memory.to_dict(),
            "depths": [s.to_dict() for s in self.stages],
        }


def evaluate_late(
    first: Result, encoder: TokenEncoder, depths: Sequence[int], metrics: Sequence[str] | None = None
) -> LateResult:
    """Re-rank ``first`` by MaxSim at every depth (documents and queries encoded once) and report memory."""
    ds = first.dataset
    deepest = max(depths)
    qids = ds.query_ids
    doc_ids = list(dict.fromkeys(d for q in qids for d in top_ids(first.ranking, q, deepest)))
    doc_tokens = dict(zip(doc_ids, encoder.encode([ds.corpus[d] for d in doc_ids], role="document"), strict=True))
    query_tokens = dict(zip(qids, encoder.encode([ds.queries[q] for q in qids], role="query"), strict=True))
    by_text_q = {ds.queries[q]: query_tokens[q] for q in qids}
    by_text_d = {ds.corpus[d]: doc_tokens[d] for d in doc_ids}

    def score(pairs: Sequence[tuple[str, str]], labels: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(pairs))
        by_query: dict[str, list[int]] = {}
        for i, (q, _) in enumerate(pairs):
            by_query.setdefault(q, []).append(i)
        for q, rows in by_query.items():
            out[rows] = maxsim_many(by_text_q[q], [by_text_d[pairs[i][1]] for i in rows])
        return out

    stages = evaluate_depths(first, encoder.contract, score, depths, list(metrics or first.metrics))
    memory = memory_report(list(doc_tokens.values()), encoder.contract, len(ds.corpus), first.contract.dim)
    for s in stages:
        s.timing["late_tokens_encoded"] = encoder.tokens
    return LateResult(encoder.contract, stages, memory)
