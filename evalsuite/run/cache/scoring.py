"""One contract's search and scoring in the result cache (:mod:`evalsuite.run.cache.results` holds the entries).

:meth:`ScoringCache.open` keys a contract by every input of its search and scoring (:func:`score_fields`);
:meth:`ScoringCache.load` reads a hit back as a :class:`Scored` (ranking, metrics, per-query scores, and when
and at what cost they were computed); :meth:`ScoringCache.record` stores what a miss computed and gives
``timing.result_cache``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import results as resultcache
from .results import (
    RETRIEVAL_LIBRARIES,
    RETRIEVAL_MODULES,
    SCORE_LIBRARIES,
    SCORE_MODULES,
    Entry,
    ResultStore,
    array_digest,
    json_digest,
    store_for,
    strings_digest,
)

if TYPE_CHECKING:
    from ...contract import Contract
    from ...datasets import Dataset
    from ...retrieval.search import Ranking
    from ..spec import RunSpec


# -- one scored contract --------------------------------------------------------------------------
@dataclass(frozen=True)
class Scored:
    """A contract's ranking and scores as the cache holds them."""

    ranking: Ranking
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    created: str  # when the run that computed them stored them
    seconds: dict[str, float]  # what search and scoring cost that run
    retrieval: dict[str, Any] | None = None  # the manifest's retrieval entry as that run made it (not dense)


def score_fields(
    dataset: Dataset,
    query_vectors: np.ndarray,
    doc_vectors: np.ndarray,
    *,
    k: int,
    similarity: str,
    index: str,
    metrics: Sequence[str],
    retrieval: str = "dense",
) -> dict[str, object]:
    """Every input of one search + scoring, as the key's fields (digests of the large ones). A retriever other
    than ``dense`` adds itself, the corpus it reads (the dataset's identity) and the libraries and source that rank
    with it; a dense key has none of them, so it stays what it was before retrievers were declared."""
    fields = {
        "query_vectors": array_digest(query_vectors),
        "doc_vectors": array_digest(doc_vectors),
        "query_ids": strings_digest(dataset.query_ids),
        "doc_ids": strings_digest(dataset.doc_ids),
        "qrels": json_digest(dataset.qrels),
        "k": k,
        "similarity": similarity,
        "index": index,
        "metrics": list(metrics),
        "libraries": resultcache.library_versions(SCORE_LIBRARIES),
        "code": resultcache.code_digest(SCORE_MODULES),
    }
    if retrieval != "dense":
        fields["retrieval"] = retrieval
        fields["corpus"] = dataset.identity.sha256
        fields["retrieval_libraries"] = resultcache.library_versions(RETRIEVAL_LIBRARIES)
        fields["retrieval_code"] = resultcache.code_digest(RETRIEVAL_MODULES)
    return fields


class ScoringCache:
    """One contract's search and scoring in the result cache: :meth:`load` before searching, :meth:`record`
    after scoring (it stores what a miss computed and returns ``timing.result_cache``)."""

    def __init__(self, store: ResultStore, fields: dict[str, object], doc_ids: Sequence[str], doc_vectors: np.ndarray):
        self.store = store
        self.fields = fields
        self.key = store.key("score", fields)[0]
        self.doc_ids = doc_ids
        self.doc_vectors = doc_vectors  # finalized, as the key has them: the search needs no second copy
        self._t0 = time.perf_counter()

    @classmethod
    def open(
        cls,
        spec: RunSpec,
        dataset: Dataset,
        query_vectors: np.ndarray,
        doc_pooled: object,
        contract: Contract,
        metrics: Sequence[str],
    ) -> ScoringCache | None:
        """The entry of this contract's inputs; None when not cached: ``--no-cache``, documents in a block-wise
        store (never loaded whole), or an index other than exact flat search (its latency is measured)."""
        from ...retrieval.vectors import finalize
        from ...scoring.metrics import search_depth

        store = store_for(spec)
        if store is None or contract.index != "flat" or not isinstance(doc_pooled, np.ndarray):
            return None
        dv = finalize(doc_pooled, contract.dim, contract.normalize)
        fields = score_fields(
            dataset,
            query_vectors,
            dv,
            k=search_depth(metrics),
            similarity=contract.similarity,
            index=contract.index,
            metrics=metrics,
            retrieval=contract.retrieval,
        )
        return cls(store, fields, dataset.doc_ids, dv)

    def load(self) -> Scored | None:
        return self.store.load("score", self.fields, lambda entry: _undump_scored(entry, self.doc_ids))

    def record(
        self,
        hit: Scored | None,
        ranking: Ranking,
        metrics: Mapping[str, float],
        per_query: Mapping[str, Mapping[str, float]],
        timing: Mapping[str, Any],
        retrieval: Mapping[str, Any] | None = None,
    ) -> dict[str, object]:
        """``timing.result_cache`` of this contract; on a miss the fresh result is stored first, with the
        manifest's ``retrieval`` entry of a retriever other than dense (a hybrid's component metrics and gain:
        a hit reads them back, as its ranking)."""
        if hit is not None:
            return {
                "status": "hit",
                "key": self.key[:16],
                "computed": hit.created,
                **{f"computed_{k}": v for k, v in hit.seconds.items()},
                "seconds": round(time.perf_counter() - self._t0, 4),
            }
        seconds = {k: float(timing[k]) for k in ("search_seconds", "score_seconds") if k in timing}
        payload, arrays = _dump_scored(ranking, metrics, per_query, seconds, self.doc_ids)
        if retrieval is not None:
            payload["retrieval"] = dict(retrieval)
        self.store.save("score", self.fields, payload, arrays)
        return {"status": "miss", "key": self.key[:16]}

    @property
    def problems(self) -> list[str]:
        return self.store.problems


def _dump_scored(
    ranking: Ranking,
    aggregate: Mapping[str, float],
    per_query: Mapping[str, Mapping[str, float]],
    seconds: Mapping[str, float],
    doc_ids: Sequence[str],
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    position = {d: i for i, d in enumerate(doc_ids)}
    qids = list(ranking)
    lengths = np.array([len(ranking.doc_ids[q]) for q in qids], dtype=np.int64)
    index = np.fromiter((position[d] for q in qids for d in ranking.doc_ids[q]), dtype=np.int64, count=lengths.sum())
    scores = np.fromiter((s for q in qids for s in ranking.scores[q]), dtype=np.float64, count=lengths.sum())
    payload = {
        "query_ids": qids,
        "depth": ranking.depth,
        "corpus_size": ranking.corpus_size,
        "metrics": dict(aggregate),
        "per_query": {m: dict(v) for m, v in per_query.items()},
        "seconds": dict(seconds),
    }
    return payload, {"lengths": lengths, "doc_index": index, "scores": scores}


def _undump_scored(entry: Entry, doc_ids: Sequence[str]) -> Scored:
    from ...retrieval.search import Ranking

    p, a = entry.payload, entry.arrays
    lengths, index, scores = a["lengths"], a["doc_index"], a["scores"]
    qids = [str(q) for q in p["query_ids"]]
    if len(lengths) != len(qids) or int(lengths.sum()) != len(index) or len(index) != len(scores):
        raise ValueError("ranking arrays do not match the stored queries")
    if len(index) and (index.min() < 0 or index.max() >= len(doc_ids)):
        raise ValueError("ranking refers to a document the corpus does not hold")
    ids = np.asarray(doc_ids, dtype=object)[index]
    ends = np.cumsum(lengths)
    starts = ends - lengths
    docs = {q: tuple(ids[s:e].tolist()) for q, s, e in zip(qids, starts, ends, strict=True)}
    values = {q: tuple(scores[s:e].tolist()) for q, s, e in zip(qids, starts, ends, strict=True)}
    ranking = Ranking(docs, values, depth=p["depth"], corpus_size=p["corpus_size"])
    aggregate = {str(m): float(v) for m, v in p["metrics"].items()}
    per_query = {str(m): {str(q): float(s) for q, s in v.items()} for m, v in p["per_query"].items()}
    seconds = {str(k): float(v) for k, v in p["seconds"].items()}
    retrieval = p.get("retrieval")
    if retrieval is not None and not isinstance(retrieval, dict):
        raise ValueError("the stored retrieval entry is not a mapping")
    return Scored(ranking, aggregate, per_query, entry.created, seconds, retrieval)
