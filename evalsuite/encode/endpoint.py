"""Client for an OpenAI-compatible ``/v1/embeddings`` endpoint: batching, a concurrency limit,
timeouts, bounded retries, float or base64, ``dimensions``, the served model name.

Every response goes through :func:`evalsuite.encode.response.parse_embeddings` before a vector
leaves this module, so a broken answer raises a typed ``EndpointError`` naming the item.

Texts arrive rendered by the contract (prefixes applied). The API key is held
in a :class:`Secret`: it is sent in the ``Authorization`` header and appears nowhere else.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from ..errors import EndpointError, SpecError
from .base import EncodeStats
from .response import Expectation, ResponseFormatError, label_items, parse_embeddings

ENCODING_FORMATS = ("float", "base64")
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class Secret:
    """A credential that never shows itself in ``repr``, ``str``, f-strings or logs."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def redact(self, text: str) -> str:
        return text.replace(self._value, "***") if self._value else text

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


# -- errors ---------------------------------------------------------------------------------------
class EndpointUnreachable(EndpointError):
    """No HTTP answer at all (connection refused or dropped), after the bounded retries."""


class EndpointTimeout(EndpointError):
    """The server accepted the connection but did not answer within the timeout."""


class EndpointHTTPError(EndpointError):
    """The server answered with an error status (after retries, for retryable ones)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class EndpointAuthError(EndpointHTTPError):
    """401/403: the key is missing, wrong, or not allowed."""


# -- configuration --------------------------------------------------------------------------------
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", base_url(self.url))
        if self.encoding_format not in ENCODING_FORMATS:
            raise SpecError(f"encoding format {self.encoding_format!r} is not valid; choose float or base64")
        for name in ("timeout", "concurrency", "batch_size"):
            if getattr(self, name) <= 0:
                raise SpecError(f"endpoint {name} must be > 0, got {getattr(self, name)!r}")
        if self.max_retries < 0:
            raise SpecError(f"endpoint max_retries must be >= 0, got {self.max_retries!r}")

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
        path = parts.path[:-3] if parts.path.endswith("/v1") else parts.path
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
        raise SpecError("the endpoint URL must not carry credentials; put the key in an environment variable "
                        "and pass --api-key-env NAME")
    path = parts.path.rstrip("/")
    if path.endswith("/embeddings"):
        path = path[: -len("/embeddings")]
    return urlunsplit((parts.scheme, parts.netloc, path or "/v1", "", ""))


# -- the client -----------------------------------------------------------------------------------
class EndpointEncoder:
    """An :class:`~evalsuite.encode.base.Encoder` backed by a served ``/v1/embeddings`` endpoint."""

    device = "endpoint"

    def __init__(self, config: EndpointConfig, expect: Expectation, *, client: Any = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        import httpx

        self.config = config
        self.expect = expect
        self.stats_by_role: dict[str, EncodeStats] = {}
        self.requests = 0
        self.retries = 0
        self._sleep = sleep
        self._own_client = client is None
        limits = httpx.Limits(max_connections=config.concurrency + 1, max_keepalive_connections=config.concurrency)
        self._client = client or httpx.Client(timeout=httpx.Timeout(config.timeout), limits=limits,
                                              follow_redirects=False, trust_env=False)

    def __repr__(self) -> str:
        return f"EndpointEncoder(url={self.config.url!r}, model={self.config.model!r})"

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    def __enter__(self) -> "EndpointEncoder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- HTTP -------------------------------------------------------------------------------------
    def headers(self, *, auth: bool = True) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        if auth and self.config.api_key is not None:
            h["Authorization"] = "Bearer " + self.config.api_key.reveal()
        return h

    def _redact(self, text: str) -> str:
        return self.config.api_key.redact(text) if self.config.api_key is not None else text

    def request(self, method: str, url: str, *, json: Any = None, auth: bool = True,
                headers: dict[str, str] | None = None, retry: bool = True) -> Any:
        """One HTTP call with bounded retries (429/5xx and connection errors); returns the response."""
        import httpx

        attempts = self.config.max_retries + 1 if retry else 1
        failure = ""
        for attempt in range(attempts):
            self.requests += 1
            retry_after = None
            try:
                resp = self._client.request(method, url, json=json, headers=headers or self.headers(auth=auth))
            except httpx.ConnectTimeout:
                failure = f"connect timed out after {self.config.timeout:g}s"
            except httpx.TimeoutException as exc:  # the server took the request and went quiet: no retry
                raise EndpointTimeout(f"{method} {url}: no answer within {self.config.timeout:g}s "
                                      f"({type(exc).__name__}); raise --endpoint-timeout if the server is "
                                      "just slow") from None
            except httpx.TransportError as exc:  # refused, reset, dropped: retried
                failure = f"{type(exc).__name__}: {self._redact(str(exc))}"
            else:
                if resp.status_code not in RETRY_STATUSES or attempt == attempts - 1:
                    return resp
                retry_after = resp.headers.get("retry-after")
            if attempt < attempts - 1:
                self._wait(attempt, retry_after)
                self.retries += 1
        # chained exceptions are dropped on purpose: httpx's carry the request and its headers
        raise EndpointUnreachable(f"{method} {url}: {failure} ({attempts} attempt(s)); is the server up and the "
                                  "URL right?")

    def _wait(self, attempt: int, retry_after: str | None) -> None:
        delay = min(self.config.max_backoff, self.config.backoff * (2 ** attempt))
        delay *= 0.5 + random.random() / 2
        if retry_after:
            try:
                delay = max(delay, min(float(retry_after), self.config.max_backoff))
            except ValueError:
                pass
        self._sleep(delay)

    def error_for(self, resp: Any, what: str) -> EndpointHTTPError:
        body = self._redact(resp.text.strip().replace("\n", " "))[:200]
        cls = EndpointAuthError if resp.status_code in (401, 403) else EndpointHTTPError
        hint = {401: "; set the key's environment variable and pass --api-key-env NAME",
                403: "; the key is not allowed to use this endpoint",
                404: "; check the URL (the OpenAI base, e.g. http://host:8000/v1) and --served-model"}
        return cls(f"{what}: HTTP {resp.status_code}: {body or '(empty body)'}{hint.get(resp.status_code, '')}",
                   resp.status_code)

    def get_json(self, url: str) -> Any:
        resp = self.request("GET", url)
        if resp.status_code != 200:
            raise self.error_for(resp, f"GET {url}")
        try:
            return resp.json()
        except ValueError:
            raise ResponseFormatError(f"GET {url}: the body is not JSON") from None

    def payload(self, texts: Sequence[str], dimensions: int | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"input": list(texts), "encoding_format": self.config.encoding_format}
        if self.config.model:
            body["model"] = self.config.model
        if dimensions:
            body["dimensions"] = int(dimensions)
        return body

    # -- embeddings -------------------------------------------------------------------------------
    def _post_batch(self, texts: Sequence[str], labels: Sequence[str], dimensions: int | None,
                    check_norm: bool) -> np.ndarray:
        url = self.config.embeddings_url
        resp = self.request("POST", url, json=self.payload(texts, dimensions))
        if resp.status_code != 200:
            raise self.error_for(resp, f"POST {url} ({len(texts)} input(s), first {labels[0]})")
        try:
            payload = resp.json()
        except ValueError:
            raise ResponseFormatError(f"POST {url}: the body is not JSON") from None
        return parse_embeddings(payload, labels, self.expect, dimensions=dimensions,
                                encoding_format=self.config.encoding_format, check_norm=check_norm)

    def embed(self, texts: Sequence[str], *, ids: Sequence[str] | None = None, dimensions: int | None = None,
              batch_size: int | None = None, check_norm: bool = True, sort_by_length: bool = True) -> np.ndarray:
        """Checked vectors for ``texts`` as sent (no prefix added), float32 rows in input order."""
        n = len(texts)
        want = dimensions or self.expect.dim
        if n == 0:
            return np.zeros((0, want), dtype=np.float32)
        labels = label_items(texts, ids)
        order = sorted(range(n), key=lambda i: len(texts[i])) if sort_by_length else list(range(n))
        size = batch_size or self.config.batch_size
        chunks = [order[i:i + size] for i in range(0, n, size)]
        out = np.empty((n, want), dtype=np.float32)

        def one(chunk: list[int]) -> None:
            out[chunk] = self._post_batch([texts[i] for i in chunk], [labels[i] for i in chunk], dimensions,
                                          check_norm)

        if len(chunks) == 1 or self.config.concurrency == 1:
            for chunk in chunks:
                one(chunk)
            return out
        with ThreadPoolExecutor(max_workers=min(self.config.concurrency, len(chunks))) as pool:
            futures = [pool.submit(one, c) for c in chunks]
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            for f in pending:
                f.cancel()
            for f in futures:
                if f.done() and not f.cancelled() and f.exception() is not None:
                    raise f.exception()  # type: ignore[misc]
        return out

    def encode(self, texts: Sequence[str], *, poolings: Sequence[str] = ("mean",),
               ids: Sequence[str] | None = None, role: str = "document") -> dict[str, np.ndarray]:
        """The Encoder protocol: the server pools its own way, so exactly one pooling name is accepted."""
        poolings = list(dict.fromkeys(poolings))
        if len(poolings) != 1:
            raise SpecError(f"an endpoint serves one pooling; asked for {poolings}")
        t0 = time.perf_counter()
        before = self.requests
        vectors = self.embed(list(texts), ids=ids)
        stats = EncodeStats(texts=len(texts), batches=self.requests - before, seconds=time.perf_counter() - t0)
        self.stats_by_role.setdefault(role, EncodeStats()).add(stats)
        return {poolings[0]: vectors}
