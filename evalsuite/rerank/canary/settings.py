"""Settings of the reranker canary: where the served reranker is, and the tolerances of each check."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...encode.endpoint import EndpointConfig, Secret
from ...errors import SpecError
from .shapes import APIS


@dataclass(frozen=True)
class RerankCanarySettings:
    endpoint: str
    api: str = "rerank"  # rerank | tei | score (see shapes.APIS)
    served_model: str | None = None
    api_key_env: str | None = None
    timeout: float = 30.0
    deadline: float = 600.0  # the whole canary, seconds
    depth: int = 20  # documents per query sent to both sides (the first stage's top N)
    max_queries: int = 50
    score_tol: float = 0.01  # |served - reference| after the declared activation
    tau_min: float = 0.9  # per-query Kendall tau, the worst query
    overlap_k: int = 5
    overlap_min: float = 0.8  # per-query top-k overlap, the worst query
    metric_tol: float = 0.01  # |reranked metric through the endpoint - through the reference|
    top_n: int = 3  # the top_n probe (rerank API only)
    raw_scores: bool = False  # ask for logits (TEI raw_scores, Infinity raw_scores): compare as 'none'

    def __post_init__(self) -> None:
        if self.api not in APIS:
            raise SpecError(f"reranker API {self.api!r} is not valid; choose one of {', '.join(APIS)}")
        for name in ("timeout", "deadline", "depth", "max_queries", "overlap_k", "top_n"):
            if getattr(self, name) <= 0:
                raise SpecError(f"rerank canary {name} must be > 0, got {getattr(self, name)!r}")
        for name in ("score_tol", "metric_tol"):
            if getattr(self, name) < 0:
                raise SpecError(f"rerank canary {name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("tau_min", "overlap_min"):
            if not -1.0 <= getattr(self, name) <= 1.0:
                raise SpecError(f"rerank canary {name} must be within [-1, 1], got {getattr(self, name)!r}")

    def api_key(self) -> Secret | None:
        return Secret.from_env(self.api_key_env, "empty; export it before running the canary")

    def endpoint_config(self) -> EndpointConfig:
        return EndpointConfig(
            url=self.endpoint.rstrip("/").removesuffix("/rerank").removesuffix("/score"),
            model=self.served_model,
            api_key=self.api_key(),
            timeout=self.timeout,
            concurrency=1,
        )

    def to_dict(self) -> dict[str, object]:
        """For reports: the key's variable name only."""
        return dataclasses.asdict(self)
