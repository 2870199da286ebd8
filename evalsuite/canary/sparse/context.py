"""What the sparse canary's checks share: the served sparse endpoint's client, the local sparse reference
(:class:`~evalsuite.encode.sparse.SparseEncoder`), the texts checked one by one, both sides' vectors of them and
both sides' sparse runs over the dataset (the sparse family's :class:`~evalsuite.checks.CheckContext`).

The texts checked one by one are the canary's probe texts (queries and documents, a near-limit one among them) and
a fixed sample of the dataset's, each rendered for its role by the contract. Served vectors are fetched once; an
endpoint failure is remembered, so every later check fails with it at once instead of asking the broken server
again (a check never raises for what the server does: :func:`evalsuite.checks.judge`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ...base.errors import EndpointError
from ...base.memo import Memo

if TYPE_CHECKING:
    from ...contract import Contract
    from ...encode.endpoint import EndpointEncoder
    from ...encode.http import Deadline
    from ...encode.sparse import SparseEncoder, SparseVector
    from ...retrieval.search import Ranking
    from ...run.pipeline import Prepared
    from .settings import SparseCanarySettings

T = TypeVar("T")
DEADLINE_WHAT = "the sparse canary's overall deadline (--canary-deadline)"


@dataclass(frozen=True)
class SparseProbes:
    """The texts checked one by one: ids, roles, and the model inputs (rendered by the contract)."""

    ids: tuple[str, ...]
    roles: tuple[str, ...]
    texts: tuple[str, ...]


@dataclass(frozen=True)
class SparseRun:
    """One side's sparse run over the dataset: its ranking, per-query scores and metrics."""

    ranking: Ranking
    per_query: dict[str, dict[str, float]]
    metrics: dict[str, float]


class SparseCanaryContext:
    """Shared by every check of one sparse canary session."""

    def __init__(self, settings: SparseCanarySettings, prepared: Prepared, encoder: SparseEncoder) -> None:
        from ...encode.http import Deadline

        self.settings = settings
        self.prepared = prepared
        self.encoder = encoder
        self.deadline: Deadline = Deadline.after(settings.deadline, DEADLINE_WHAT)
        self._cache = Memo(remember=(EndpointError,))

    def __repr__(self) -> str:
        return f"SparseCanaryContext(endpoint={self.settings.endpoint!r}, model={self.contract.model!r})"

    def _memo(self, key: str, make: Callable[[], T]) -> T:
        return self._cache.get(key, make)

    def shared(self, key: str, make: Callable[[], T]) -> T:
        """``make()`` once per context under ``key`` (what other modules derive, e.g. the diagnosis)."""
        return self._memo(f"shared:{key}", make)

    def deadline_passed(self) -> bool:
        return self.deadline.expired()

    @property
    def contract(self) -> Contract:
        return self.prepared.contract

    @property
    def top_k(self) -> int:
        """The contract's ``sparse_top_k`` (0: every weight), after the model's own ``max_active_dims``."""
        from ...retrieval.retrievers import parse_retrieval

        top_k = int(parse_retrieval(self.contract.retrieval).get("top_k"))  # type: ignore[arg-type]
        cap = self.encoder.head.max_active_dims or 0
        return min(x for x in (top_k, cap) if x) if (top_k or cap) else 0

    # -- the two sides ----------------------------------------------------------------------------
    def client(self) -> EndpointEncoder:
        """The HTTP client of the served endpoint (its answers are parsed by :mod:`evalsuite.encode.sparse_endpoint`)."""

        def make() -> EndpointEncoder:
            from ...encode.endpoint import EndpointEncoder
            from ...encode.response import Expectation

            return EndpointEncoder(
                self.settings.endpoint_config(), Expectation(dim=1, normalized=False), deadline=self.deadline
            )

        return self._memo("client", make)

    def fetch(self, texts: Sequence[str]) -> list[SparseVector]:
        """The served sparse vector of each model input (typed errors for a broken answer)."""
        from ...encode.sparse_endpoint import fetch_sparse

        return fetch_sparse(
            self.client(),
            texts,
            self.settings.api,
            vocab_size=self.encoder.head.vocab_size,
            token_ids=self.encoder.token_ids,
            specials=self.encoder.special_ids(),
            batch_size=self.settings.batch_size,
        )

    def probes(self) -> SparseProbes:
        def make() -> SparseProbes:
            from ...run import probes

            c, ds = self.contract, self.prepared.dataset
            tokenizer = self.encoder.tokenizer()

            def tokens(text: str) -> int:
                return len(tokenizer(c.render("document", text), truncation=False)["input_ids"])

            qs, docs = probes.queries(), probes.documents(c.max_length, tokens)
            rng = random.Random(0)
            n_q = min(len(ds.query_ids), self.settings.sample // 2)
            n_d = min(len(ds.doc_ids), self.settings.sample - n_q)
            sampled_q = sorted(rng.sample(list(ds.query_ids), n_q))
            sampled_d = sorted(rng.sample(list(ds.doc_ids), n_d))
            rows = (
                [(f"probe {i}", "query", t) for i, t in qs]
                + [(f"probe {i}", "document", t) for i, t in docs]
                + [(f"query {q}", "query", ds.queries[q]) for q in sampled_q]
                + [(f"document {d}", "document", ds.corpus[d]) for d in sampled_d]
            )
            return SparseProbes(
                ids=tuple(r[0] for r in rows),
                roles=tuple(r[1] for r in rows),
                texts=tuple(c.render(r[1], r[2]) for r in rows),
            )

        return self._memo("probes", make)

    def reference_vectors(self) -> list[SparseVector]:
        """The reference's sparse vector of each probe text (every weight: no pruning)."""
        return self._memo("reference_vectors", lambda: self.encoder.encode(self.probes().texts))

    def served_vectors(self) -> list[SparseVector]:
        return self._memo("served_vectors", lambda: self.fetch(self.probes().texts))

    def reference_run(self) -> SparseRun:
        def make() -> SparseRun:
            c, ds = self.contract, self.prepared.dataset
            queries = self.encoder.encode(c.render_all("query", [ds.queries[q] for q in ds.query_ids]), self.top_k)
            docs = self.encoder.encode(c.render_all("document", _corpus(self.prepared)), self.top_k)
            return self._score(queries, docs)

        return self._memo("reference_run", make)

    def served_run(self) -> SparseRun:
        """The whole dataset through the endpoint, pruned to the contract's ``sparse_top_k`` as the index would hold
        it, searched and scored like the reference's run."""

        def make() -> SparseRun:
            from ...encode.sparse import prune

            c, ds = self.contract, self.prepared.dataset
            queries = self.fetch(c.render_all("query", [ds.queries[q] for q in ds.query_ids]))
            docs = self.fetch(c.render_all("document", _corpus(self.prepared)))
            return self._score(
                [prune(i, w, self.top_k) for i, w in queries], [prune(i, w, self.top_k) for i, w in docs]
            )

        return self._memo("served_run", make)

    def _score(self, queries: list[SparseVector], docs: list[SparseVector]) -> SparseRun:
        from ...retrieval.sparse_search import sparse_search
        from ...scoring.metrics import evaluate, search_depth

        ds, metrics = self.prepared.dataset, self.prepared.spec.metrics
        ranking = sparse_search(
            queries,
            docs,
            query_ids=ds.query_ids,
            doc_ids=ds.doc_ids,
            vocab_size=self.encoder.head.vocab_size,
            k=search_depth(metrics),
        )
        aggregate, per_query = evaluate(ds.qrels, ranking, metrics)
        return SparseRun(ranking, per_query, aggregate)

    def close(self) -> None:
        client = self._cache.pop("client")
        if client is not None:
            client.close()  # type: ignore[attr-defined]


def _corpus(prepared: Prepared) -> list[str]:
    ds = prepared.dataset
    return [t for _, chunk in ds.corpus_chunks(len(ds.doc_ids) or 1) for t in chunk]


def make_sparse_context(settings: SparseCanarySettings, prepared: Prepared) -> SparseCanaryContext:
    """The local sparse reference of ``prepared``'s model (refused, typed, when it has no sparse head) and the
    context of the served endpoint."""
    from ...encode.sparse import SparseEncoder

    spec = prepared.spec
    encoder = SparseEncoder.of(
        prepared.model,
        max_length=prepared.contract.max_length,
        device=spec.device,
        batch_size=spec.batch_size,
        trust_remote_code=spec.trust_remote_code,
    )
    return SparseCanaryContext(settings, prepared, encoder)
