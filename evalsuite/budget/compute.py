"""Each configuration's ranking and per-query scores, computed once from shared vectors.

Vectors come from one forward pass per (encoder, dtype): the local reference (the embedding cache keys it) or the
served engine (the run's endpoint client); every dimension is cut from them (:func:`~evalsuite.retrieval.vectors
.finalize`). Exact search and scoring are the run's (:func:`evalsuite.run.pipeline.score`), an index is built,
searched and measured as the sweep's index cells are (:func:`evalsuite.sweep.index_cells.score_index`), and the
built index is searched through the audit's store (:class:`~evalsuite.audit.source.IndexSource`) as deployed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.errors import BudgetStageError, EvalsuiteError
from .config import Config

if TYPE_CHECKING:
    from ..encode.base import Encoder
    from ..retrieval.search import Ranking
    from ..run.result import Result
    from .plan import BudgetPlan


@dataclass(frozen=True)
class Scored:
    """One configuration: its ranking, aggregate and per-query scores (``(n_queries, n_metrics)`` in
    :attr:`Evaluator.query_ids` order), what it costs, and what else was measured (recall against exact search)."""

    config: Config
    ranking: Ranking
    metrics: dict[str, float]
    scores: np.ndarray
    cost: dict[str, object] = field(default_factory=dict)
    measured: dict[str, object] = field(default_factory=dict)


class Evaluator:
    """Computes and memoizes :class:`Scored` per configuration key, and the vectors per (encoder, dtype)."""

    def __init__(self, plan: BudgetPlan, *, vectors: Evaluator | None = None) -> None:
        """``vectors``: another evaluator of the same model, dataset and endpoint whose vectors are shared."""
        self.plan = plan
        ds = plan.prepared.dataset
        self.query_ids: tuple[str, ...] = tuple(sorted(str(q) for q in ds.qrels))
        self._vectors: dict[tuple[bool, str], tuple[np.ndarray, np.ndarray]] = (
            vectors._vectors if vectors is not None else {}
        )
        self._scored: dict[Config, Scored] = {}
        self._exact: dict[tuple[bool, str, int], Result] = {}
        self.encode_seconds: dict[str, float] = {}
        self._scorer: Any = None  # the reranker's scorer, made on first use

    def __call__(self, config: Config) -> Scored:
        key = config.key()
        if key not in self._scored:
            self._scored[key] = self._compute(key)
        return self._scored[key]

    @property
    def computed(self) -> int:
        return len(self._scored)

    # -- vectors ------------------------------------------------------------------------------------------------
    def vectors(self, served: bool, dtype: str) -> tuple[np.ndarray, np.ndarray]:
        """Pooled full-dimension (queries, documents) of the local model at ``dtype`` or of the served engine."""
        key = (served, "served" if served else dtype)
        if key not in self._vectors:
            from ..run.pipeline import encode_dataset

            plan = self.plan
            c = plan.prepared.contract
            t0 = time.perf_counter()
            encoder = self._served_encoder() if served else self._local_encoder(dtype)
            try:
                q, d = encode_dataset(encoder, c, plan.prepared.dataset, [c.pooling])
            except EvalsuiteError as exc:
                if served:
                    raise BudgetStageError("served", f"{exc}; check the endpoint with `evalsuite canary`") from None
                raise
            self.encode_seconds["served" if served else dtype] = round(time.perf_counter() - t0, 3)
            self._vectors[key] = (q[c.pooling], d[c.pooling])
        return self._vectors[key]

    def _local_encoder(self, dtype: str) -> Encoder:
        from ..run.pipeline import make_encoder

        return make_encoder(self.plan.prepared, dtype=dtype)

    def _served_encoder(self) -> Encoder:
        import dataclasses

        from ..run.pipeline import make_encoder

        plan = self.plan
        assert plan.served_spec is not None
        served = dataclasses.replace(plan.prepared, spec=plan.served_spec)
        try:
            return make_encoder(served)
        except EvalsuiteError as exc:
            raise BudgetStageError(
                "served", f"{exc}; the endpoint must serve the contract's model (`evalsuite canary` checks it)"
            ) from None

    # -- one configuration --------------------------------------------------------------------------------------
    def _compute(self, config: Config) -> Scored:
        if config.reranker:
            return self._rerank(config)
        if config.hybrid:
            return self._retrieve(config)
        from ..run.pipeline import score
        from ..scoring.stats import paired_scores
        from ..sweep.index_cells import score_index

        plan = self.plan
        q, d = self.vectors(config.served, config.dtype)
        contract = plan.reference.replace(dtype=plan.production.dtype if config.served else config.dtype)
        contract = contract.replace(dim=config.dim)
        metrics = list(plan.metrics)
        if config.store:
            ranking, cost, measured = self._store_search(q, contract)
            from ..scoring.metrics import evaluate

            aggregate, per_query = evaluate(plan.prepared.dataset.qrels, ranking, metrics)
        else:
            flat_key = (config.served, config.dtype, config.dim)
            exact = self._exact.get(flat_key)
            if exact is None:
                exact = self._exact[flat_key] = score(
                    plan.prepared, contract, q, d, metrics=metrics, timing={}, device="cpu", keep_vectors=False
                )
            spec = plan.layout.spec(config)
            result, report = score_index(
                plan.prepared,
                contract.replace(index=spec.text),
                q,
                d,
                exact,
                metrics=metrics,
                timing={},
                device="cpu",
            )
            ranking, aggregate, per_query = result.ranking, result.metrics, result.per_query
            cost = {
                "index": report.effective,
                "bytes_per_vector": round(report.bytes_per_vector, 2),
                "index_bytes": report.serialized_bytes,
                "bytes_1m_vectors": report.bytes_1m_vectors,
                "query_p50_ms": round(report.query_latency.p50_ms, 4),
            }
            measured = {f"recall@{k}_vs_exact": round(v, 6) for k, v in report.recall.items()}
            if report.notes:
                measured["notes"] = list(report.notes)
        _, scores, _ = paired_scores(per_query, per_query, metrics)
        return Scored(config, ranking, dict(aggregate), scores, cost, measured)

    def _retrieve(self, config: Config) -> Scored:
        """The production retriever over the configuration's dense ranking (a hybrid fuses it with the lexical
        retriever: the run's own retrieval, :func:`evalsuite.run.retrieve.retrieve`)."""
        import dataclasses

        from ..run.retrieve import dense_at, retrieve
        from ..scoring.metrics import evaluate, search_depth
        from ..scoring.stats import paired_scores

        plan = self.plan
        first = self(dataclasses.replace(config, hybrid=False))
        k = search_depth(plan.metrics)
        ds = plan.prepared.dataset
        t0 = time.perf_counter()
        retrieved = retrieve(plan.prepared, plan.production, k, dense_at(first.ranking, k, None))
        seconds = time.perf_counter() - t0
        aggregate, per_query = evaluate(ds.qrels, retrieved.ranking, list(plan.metrics))
        _, scores, _ = paired_scores(per_query, per_query, list(plan.metrics))
        cost = dict(
            first.cost,
            retrieval=plan.production.retrieval,
            retrieval_ms_per_query=round(1000 * seconds / max(1, len(ds.query_ids)), 3),
        )
        return Scored(config, retrieved.ranking, dict(aggregate), scores, cost, dict(first.measured))

    def _rerank(self, config: Config) -> Scored:
        """The configuration's first stage, its top N reranked by the local cross-encoder (the rerank package's
        scorer behind its score cache, and its reordering)."""
        import dataclasses

        from ..rerank.run import make_scorer, resolve_reranker
        from ..rerank.twostage import rerank, score_pairs
        from ..scoring.metrics import evaluate
        from ..scoring.stats import paired_scores

        plan = self.plan
        assert plan.reranker is not None
        first = self(dataclasses.replace(config, reranker=False))
        if self._scorer is None:
            info, contract = resolve_reranker(plan.reranker)
            self._scorer = make_scorer(info, contract, plan.prepared.spec, plan.reranker)
        ds, depth = plan.prepared.dataset, plan.reranker.depth
        t0 = time.perf_counter()
        pairs = score_pairs(first.ranking, ds, depth, self._scorer.score)
        seconds = time.perf_counter() - t0
        ranking = rerank(first.ranking, pairs, depth, list(ds.query_ids))
        aggregate, per_query = evaluate(ds.qrels, ranking, list(plan.metrics))
        _, scores, _ = paired_scores(per_query, per_query, list(plan.metrics))
        cost = dict(
            first.cost, rerank_depth=depth, rerank_ms_per_query=round(1000 * seconds / max(1, len(ds.query_ids)), 3)
        )
        return Scored(config, ranking, dict(aggregate), scores, cost, dict(first.measured))

    def _store_search(
        self, q_pooled: np.ndarray, contract: object
    ) -> tuple[Ranking, dict[str, object], dict[str, object]]:
        """The queries through the built index's own search, as deployed (the audit's store), and its cost."""
        from pathlib import Path

        from ..audit.context import _ranking
        from ..retrieval.vectors import finalize
        from ..scoring.metrics import search_depth

        plan = self.plan
        assert plan.source is not None
        info = plan.source.info()
        qv = finalize(q_pooled, info.dim, plan.reference.normalize)
        ids = [str(x) for x in plan.prepared.dataset.query_ids]
        t0 = time.perf_counter()
        try:
            hits = plan.source.search(qv, search_depth(plan.metrics), exact=False)
        except EvalsuiteError as exc:
            raise BudgetStageError("index", f"the built index cannot be searched: {exc}") from None
        seconds = time.perf_counter() - t0
        path = Path(info.location)
        size = path.stat().st_size if path.is_file() else None
        cost: dict[str, object] = {
            "index": f"{info.store} {info.index_type}",
            "bytes_per_vector": round(size / info.count, 2) if size and info.count else None,
            "index_bytes": size,
            "query_mean_ms": round(1000 * seconds / max(1, len(ids)), 4),
        }
        measured: dict[str, object] = {"stored_vectors": info.count, "search_params": dict(info.search_params)}
        return _ranking(ids, hits), cost, measured
