"""Settings of the reranker canary: where the served reranker is, and the tolerances of its checks.

Declared like :class:`~.settings.CanarySettings`: each field names the option that sets it (as
``evalsuite.run.options.collect`` returns it) and its bounds in its metadata; validation, ``from_values``
and the option help texts (:mod:`.rerank_options`) read the declaration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...base.errors import SpecError
from ..embedding.settings import _setting, check_bounds

if TYPE_CHECKING:
    from ...encode.endpoint import EndpointConfig, Secret

# the request/answer shapes of evalsuite.rerank.shapes.APIS (kept here as names: settings import nothing heavy)
API_NAMES = ("rerank", "tei", "score")


@dataclass(frozen=True)
class RerankCanarySettings:
    endpoint: str = _setting("", "reranker_endpoint")
    api: str = _setting("rerank", "reranker_api")  # rerank | tei | score (see rerank.shapes.APIS)
    served_model: str | None = _setting(None, "reranker_served_model")
    api_key_env: str | None = _setting(None, "api_key_env")
    timeout: float = _setting(30.0, low=0.0, low_open=True)
    deadline: float = _setting(600.0, low=0.0, low_open=True)  # the whole canary, seconds
    depth: int = _setting(20, "reranker_canary_depth", low=1)  # the first stage's top N, sent to both sides
    max_queries: int = _setting(50, "reranker_canary_queries", low=1)
    score_tol: float = _setting(0.01, "reranker_score_tol", low=0.0)  # |served - reference| after the activation
    tau_min: float = _setting(0.9, "reranker_tau_min", low=-1.0, high=1.0)  # per-query Kendall tau, the worst query
    overlap_k: int = _setting(5, low=1)
    overlap_min: float = _setting(0.8, low=-1.0, high=1.0)  # per-query top-k overlap, the worst query
    metric_tol: float = _setting(0.01, "reranker_metric_tol", low=0.0)  # |reranked metric served - reference|
    top_n: int = _setting(3, low=1)  # the top_n probe (rerank API only)
    raw_scores: bool = _setting(False, "reranker_raw_scores")  # ask for logits: compare with activation 'none'

    def __post_init__(self) -> None:
        if not self.endpoint:
            raise SpecError("the reranker canary needs --reranker-endpoint URL (the served reranker's base URL)")
        if self.api not in API_NAMES:
            raise SpecError(f"reranker API {self.api!r} is not valid; choose one of {', '.join(API_NAMES)}")
        check_bounds(self, "reranker canary")

    @classmethod
    def option_fields(cls) -> dict[str, str]:
        """Option name (as ``collect`` returns it) -> the field that takes its value."""
        return {f.metadata["option"]: f.name for f in dataclasses.fields(cls) if f.metadata.get("option")}

    @classmethod
    def option_default(cls, option: str) -> object:
        """The default behind an option (for its help text); None for ``--reranker-endpoint`` (required)."""
        field = cls.option_fields().get(option)
        if field is None:
            raise SpecError(f"unknown reranker canary option {option!r}; known: {', '.join(cls.option_fields())}")
        default = {f.name: f.default for f in dataclasses.fields(cls)}[field]
        return default or None if isinstance(default, str | bool) else default

    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> RerankCanarySettings | None:
        """From ``collect(namespace, RERANK_CANARY_OPTIONS, prefix)``; None without ``--reranker-endpoint``."""
        fields = cls.option_fields()
        unknown = set(values) - set(fields)
        if unknown:
            raise SpecError(f"unknown reranker canary setting(s) {sorted(unknown)}; known: {', '.join(fields)}")
        if not values.get("reranker_endpoint"):
            return None
        return cls(**{fields[k]: v for k, v in values.items() if v is not None})  # type: ignore[arg-type]

    def api_key(self) -> Secret | None:
        from ...encode.endpoint import Secret

        return Secret.from_env(self.api_key_env, "empty; export it before running the canary")

    def endpoint_config(self) -> EndpointConfig:
        from ...encode.endpoint import EndpointConfig

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


NEEDS_RERANKER = (
    "the reranker canary needs --reranker DIR: the local reference (a cross-encoder directory or a "
    "cached hub id) of what --reranker-endpoint serves"
)
