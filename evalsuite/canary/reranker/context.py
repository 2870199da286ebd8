"""What the reranker canary's checks share: the candidate pairs, the reference scores, the served scores
(the reranker family's :class:`~evalsuite.checks.CheckContext`).

The candidates are the first stage's top ``depth`` documents of up to ``max_queries`` queries; both
sides score exactly these pairs. Served scores are fetched once; a query whose answer breaks the API
is recorded (its error message) rather than raised, so every check answers with a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ...base.errors import EvalsuiteError
from ...rerank.twostage import top_ids

if TYPE_CHECKING:
    from ...encode.http import Deadline
    from ...rerank.client import RerankClient
    from ...rerank.contract import RerankerContract
    from ...rerank.local import LocalReranker
    from ...rerank.run import RerankSpec
    from ...run.result import Result
    from ...run.spec import RunSpec
    from .settings import RerankCanarySettings

DEADLINE_WHAT = "the reranker canary's deadline"


@dataclass
class RerankCanaryContext:
    settings: RerankCanarySettings
    client: RerankClient
    reference: LocalReranker
    contract: RerankerContract
    first: Result
    deadline: Deadline  # the whole canary's (``settings.deadline``), shared with every request of the client
    candidates: dict[str, list[str]] = field(default_factory=dict)
    _reference: dict[str, np.ndarray] | None = None
    _served: dict[str, np.ndarray] | None = None
    _orders: dict[str, list[int]] = field(default_factory=dict)
    served_errors: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        qids = self.first.dataset.query_ids[: self.settings.max_queries]
        self.candidates = {q: top_ids(self.first.ranking, q, self.settings.depth) for q in qids}

    def deadline_passed(self) -> bool:
        return self.deadline.expired()

    @property
    def compare_activation(self) -> str:
        """Served scores are compared after this activation: the contract's, or none when raw scores are asked."""
        return "none" if self.settings.raw_scores else self.contract.activation

    def texts(self, qid: str) -> tuple[str, list[str]]:
        ds = self.first.dataset
        return ds.queries[qid], [ds.corpus[d] for d in self.candidates[qid]]

    def reference_scores(self) -> dict[str, np.ndarray]:
        if self._reference is None:
            keys = [(q, d) for q, docs in self.candidates.items() for d in docs]
            ds = self.first.dataset
            logits = self.reference.logits(
                [(ds.queries[q], ds.corpus[d]) for q, d in keys], [f"{q}/{d}" for q, d in keys]
            )
            from ...rerank.contract import activate

            flat = activate(logits, self.compare_activation)
            out, at = {}, 0
            for q, docs in self.candidates.items():
                out[q] = flat[at : at + len(docs)]
                at += len(docs)
            self._reference = out
        return self._reference

    def served_scores(self) -> dict[str, np.ndarray]:
        """Scores for every query whose answer was sound; failures land in ``served_errors``."""
        if self._served is None:
            out: dict[str, np.ndarray] = {}
            for q in self.candidates:
                query, docs = self.texts(q)
                if not docs:
                    continue
                try:
                    out[q], self._orders[q] = self.client.score(query, docs, what=f"query {q}, {len(docs)} documents")
                except EvalsuiteError as exc:
                    self.served_errors[q] = str(exc)
                    if len(self.served_errors) >= 3:  # a broken server: stop after three failures
                        break
            self._served = out
        return self._served

    def close(self) -> None:
        self.client.close()


def make_rerank_context(
    settings: RerankCanarySettings,
    spec: RunSpec,
    rspec: RerankSpec,
    first: Result | None = None,
) -> RerankCanaryContext:
    """The reranker pinned, the served reranker's client, the local reference and the first stage (``first``,
    or run from ``spec`` deep enough for ``settings.depth``)."""
    from ...encode.http import Deadline
    from ...rerank.client import RerankClient
    from ...rerank.run import make_reranker, resolve_reranker, run_first_stage

    info, contract = resolve_reranker(rspec)
    config = settings.endpoint_config()  # a missing key variable is a usage error, before any work
    if first is None:
        _, first = run_first_stage(spec, [settings.depth])
    deadline = Deadline.after(settings.deadline, DEADLINE_WHAT)
    client = RerankClient(
        config,
        settings.api,
        raw_scores=settings.raw_scores,
        truncate_prompt_tokens=contract.max_length,  # vLLM refuses an over-long pair unless asked to truncate
        deadline=deadline,
    )
    return RerankCanaryContext(settings, client, make_reranker(info, contract, spec, rspec), contract, first, deadline)
