"""Settings of the sparse canary (`evalsuite canary --endpoint URL --retrieval sparse`): where the served sparse
endpoint is, the shape it answers in, and the tolerances of its checks.

Declared like :class:`~evalsuite.canary.embedding.settings.CanarySettings`: each field names the option that sets it
(as ``evalsuite.run.options.collect`` returns it) and its bounds in its metadata. The endpoint options (``--endpoint``,
``--served-model``, ``--api-key-env``, ``--endpoint-timeout``, ``--endpoint-batch-size``) and the retrieval
thresholds (``--canary-max-ndcg-delta``, ``--canary-min-overlap``, ``--canary-deadline``) are the embedding canary's
own flags, read here; the sparse ones are :mod:`.options`'. Nothing heavy is imported.
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

# the shapes of evalsuite.encode.sparse_endpoint.SPARSE_SHAPES (names only: settings import nothing heavy)
SPARSE_APIS = ("vllm", "tei")
# embedding canary options that mean nothing to the sparse canary: given with --retrieval sparse, a usage error
_NOT_SPARSE = {
    "canary_min_cosine": "--canary-min-cosine",
    "canary_detect": "--canary-detect",
    "canary_dimensions": "--canary-dimensions",
    "suspect_models": "--suspect-model",
    "endpoint_concurrency": "--endpoint-concurrency",
    "encoding_format": "--encoding-format",
}


@dataclass(frozen=True)
class SparseCanarySettings:
    endpoint: str = _setting("", "endpoint")
    api: str = _setting("vllm", "sparse_api")  # vllm (/pooling token_classify) | tei (/embed_sparse)
    served_model: str | None = _setting(None, "served_model")
    api_key_env: str | None = _setting(None, "api_key_env")
    timeout: float = _setting(30.0, "endpoint_timeout", low=0.0, low_open=True)
    batch_size: int = _setting(32, "endpoint_batch_size", low=1)
    deadline: float = _setting(3600.0, "canary_deadline", low=0.0, low_open=True)  # the whole canary, seconds
    # per text, the share of active token ids both sides hold (an id one side holds with a weight at most
    # weight_tol is the ReLU's edge, not a disagreement); the worst text decides
    min_overlap: float = _setting(1.0, "sparse_min_overlap", low=0.0, high=1.0)
    weight_tol: float = _setting(1e-3, "sparse_weight_tol", low=0.0)  # max |served - reference| on a shared id
    sample: int = _setting(32, "sparse_canary_sample", low=0)  # dataset texts checked beside the probe texts
    max_ndcg_delta: float = _setting(0.005, "canary_max_ndcg_delta", low=0.0, high=1.0)
    min_rank_overlap: float = _setting(0.9, "canary_min_overlap", low=0.0, high=1.0)  # mean per-query top-10

    def __post_init__(self) -> None:
        if not self.endpoint:
            raise SpecError("the sparse canary needs --endpoint URL (the served model's base URL)")
        if self.api not in SPARSE_APIS:
            raise SpecError(f"--sparse-api {self.api!r} is not valid; choose one of {', '.join(SPARSE_APIS)}")
        check_bounds(self, "sparse canary")

    @classmethod
    def option_fields(cls) -> dict[str, str]:
        """Option name (as ``collect`` returns it) -> the field that takes its value."""
        return {f.metadata["option"]: f.name for f in dataclasses.fields(cls) if f.metadata.get("option")}

    @classmethod
    def option_default(cls, option: str) -> object:
        """The default behind an option (for its help text)."""
        name = cls.option_fields().get(option)
        if name is None:
            raise SpecError(f"unknown sparse canary option {option!r}; known: {', '.join(cls.option_fields())}")
        return {f.name: f.default for f in dataclasses.fields(cls)}[name]

    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> SparseCanarySettings:
        """From ``collect(namespace, CANARY_FLEET_OPTIONS + SPARSE_CANARY_OPTIONS)``: one ``--endpoint`` (a fleet is
        the embedding canary's), the embedding-only options refused by name; SpecError otherwise."""
        given = {k: v for k, v in values.items() if v is not None}
        wrong = sorted(flag for key, flag in _NOT_SPARSE.items() if given.get(key) not in (None, (), []))
        if wrong:
            raise SpecError(
                f"{', '.join(wrong)} check(s) dense vectors and do not apply to --retrieval sparse; leave them out"
            )
        urls = given.pop("endpoint", None)
        urls = [urls] if isinstance(urls, str) else list(urls) if isinstance(urls, (list, tuple)) else []
        if len(urls) != 1:
            raise SpecError(
                f"the sparse canary checks one --endpoint URL, got {len(urls)}; run it once per member of a fleet"
            )
        fields = cls.option_fields()
        unknown = set(given) - set(fields) - set(_NOT_SPARSE)
        if unknown:
            raise SpecError(f"unknown sparse canary setting(s) {sorted(unknown)}; known: {', '.join(fields)}")
        kwargs = {fields[k]: v for k, v in given.items() if k in fields}
        return cls(endpoint=str(urls[0]), **kwargs)  # type: ignore[arg-type]

    def api_key(self) -> Secret | None:
        from ...encode.endpoint import Secret

        return Secret.from_env(self.api_key_env, "empty; export it before running the canary")

    def endpoint_config(self) -> EndpointConfig:
        from ...encode.endpoint import EndpointConfig

        return EndpointConfig(
            url=self.endpoint,
            model=self.served_model,
            api_key=self.api_key(),
            timeout=self.timeout,
            concurrency=1,
            batch_size=self.batch_size,
        )

    def to_dict(self) -> dict[str, object]:
        """For reports: the key's variable name only."""
        return dataclasses.asdict(self)
