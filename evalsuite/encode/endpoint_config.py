"""Where and how to call an OpenAI-compatible embeddings endpoint: the validated settings of the client."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from ..base.errors import SpecError
from .response import ENCODING_FORMATS
from .secret import Secret


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to call the endpoint. ``url`` is the OpenAI base URL, e.g. ``http://host:8000/v1``."""

    url: str
    model: str | None = None
    api_key: Secret | None = None
    timeout: float = 30.0
    concurrency: int = 4
    batch_size: int = 32
    encoding_format: str = "float"
    max_retries: int = 3
    backoff: float = 0.25
    max_backoff: float = 4.0
    max_response_bytes: int | None = None  # cap on a decoded body; None: derived per request (see body_cap)

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", base_url(self.url))
        if self.encoding_format not in ENCODING_FORMATS:
            raise SpecError(f"encoding format {self.encoding_format!r} is not valid; choose float or base64")
        for name in ("timeout", "concurrency", "batch_size"):
            if getattr(self, name) <= 0:
                raise SpecError(f"endpoint {name} must be > 0, got {getattr(self, name)!r}")
        if self.max_retries < 0:
            raise SpecError(f"endpoint max_retries must be >= 0, got {self.max_retries!r}")
        if self.max_response_bytes is not None and self.max_response_bytes <= 0:
            raise SpecError(f"endpoint max_response_bytes must be > 0, got {self.max_response_bytes!r}")
        if self.api_key is not None:
            self.api_key.check()  # before any request: a key that cannot go in a header is a usage error

    @property
    def embeddings_url(self) -> str:
        return self.url + "/embeddings"

    @property
    def models_url(self) -> str:
        return self.url + "/models"

    def health_urls(self) -> list[str]:
        """``/health`` beside the API prefix (``/v1`` stripped), then at the server root."""
        parts = urlsplit(self.url)
        root = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        path = parts.path.removesuffix("/v1")
        return list(dict.fromkeys([root + path + "/health", root + "/health"]))

    def root_url(self, path: str) -> str:
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def base_url(url: str) -> str:
    """Normalise an endpoint URL to its OpenAI base: no trailing slash or ``/embeddings``; ``/v1`` if no path."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SpecError("the endpoint must be an http(s) URL such as http://127.0.0.1:8000/v1")
    if parts.username or parts.password:
        raise SpecError(
            "the endpoint URL must not carry credentials; put the key in an environment variable "
            "and pass --api-key-env NAME"
        )
    path = parts.path.rstrip("/")
    path = path.removesuffix("/embeddings")
    return urlunsplit((parts.scheme, parts.netloc, path or "/v1", "", ""))
