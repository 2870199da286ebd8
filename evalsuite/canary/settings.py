"""Canary settings: the real defaults, validation, and reading the API key from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import SpecError

if TYPE_CHECKING:
    from ..encode.endpoint import Secret

# option name (as evalsuite.options.collect returns it) -> settings field
_OPTION_FIELDS = {
    "endpoint": "endpoint",
    "served_model": "served_model",
    "api_key_env": "api_key_env",
    "canary_min_cosine": "min_cosine",
    "canary_max_ndcg_delta": "max_ndcg_delta",
    "canary_dimensions": "dimensions",
    "endpoint_timeout": "timeout",
    "endpoint_concurrency": "concurrency",
    "endpoint_batch_size": "batch_size",
    "encoding_format": "encoding_format",
}


@dataclass(frozen=True)
class CanarySettings:
    """How to reach the endpoint and how strict to be. Holds the key's variable name, never the key."""

    endpoint: str
    served_model: str | None = None
    api_key_env: str | None = None
    min_cosine: float = 0.99
    batch_min_cosine: float = 0.999
    max_ndcg_delta: float = 0.005
    dimensions: tuple[int, ...] = ()
    timeout: float = 30.0
    concurrency: int = 4
    batch_size: int = 32
    encoding_format: str = "float"
    max_retries: int = 3

    def __post_init__(self) -> None:
        from ..encode.endpoint import base_url

        object.__setattr__(self, "endpoint", base_url(self.endpoint))
        object.__setattr__(self, "dimensions", tuple(self.dimensions or ()))
        for name in ("min_cosine", "batch_min_cosine"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise SpecError(f"canary {name} must be in (0, 1], got {value!r}")
        if not 0.0 <= self.max_ndcg_delta <= 1.0:
            raise SpecError(f"canary max_ndcg_delta must be in [0, 1], got {self.max_ndcg_delta!r}")
        if any(not isinstance(d, int) or d < 1 for d in self.dimensions):
            raise SpecError(f"canary dimensions must be positive integers, got {list(self.dimensions)}")
        if self.encoding_format not in ("float", "base64"):
            raise SpecError(f"encoding format {self.encoding_format!r} is not valid; choose float or base64")

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> "CanarySettings":
        """From ``evalsuite.options.collect(namespace, CANARY_OPTIONS, prefix)``; raises SpecError."""
        unknown = set(values) - set(_OPTION_FIELDS)
        if unknown:
            raise SpecError(f"unknown canary setting(s) {sorted(unknown)}; known: {', '.join(sorted(_OPTION_FIELDS))}")
        if not values.get("endpoint"):
            raise SpecError("the canary needs --endpoint URL (the OpenAI base URL, e.g. http://127.0.0.1:8000/v1)")
        return cls(**{_OPTION_FIELDS[k]: v for k, v in values.items() if v is not None})

    @classmethod
    def option_default(cls, option: str) -> Any:
        """The default of the setting behind a canary option name (as ``collect`` returns it), for help texts."""
        import dataclasses

        field = {f.name: f for f in dataclasses.fields(cls)}[_OPTION_FIELDS[option]]
        return field.default

    def api_key(self) -> "Secret | None":
        """The key from the environment variable named by ``api_key_env`` (None when not configured)."""
        from ..encode.endpoint import Secret

        if not self.api_key_env:
            return None
        value = os.environ.get(self.api_key_env, "")
        if not value.strip():
            raise SpecError(f"--api-key-env names ${self.api_key_env}, but that environment variable is not set "
                            "or empty; export it (from your secret store) before running the canary")
        return Secret(value.strip())

    def to_dict(self) -> dict[str, Any]:
        """For reports: the variable's name only, never its value."""
        return {"endpoint": self.endpoint, "served_model": self.served_model, "api_key_env": self.api_key_env,
                "min_cosine": self.min_cosine, "batch_min_cosine": self.batch_min_cosine,
                "max_ndcg_delta": self.max_ndcg_delta, "dimensions": list(self.dimensions),
                "timeout": self.timeout, "concurrency": self.concurrency, "batch_size": self.batch_size,
                "encoding_format": self.encoding_format, "max_retries": self.max_retries}
