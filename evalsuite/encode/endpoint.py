"""Client for an OpenAI-compatible ``/v1/embeddings`` endpoint: batching, a concurrency limit,
a total deadline per request and an optional overall one, bounded retries, float or base64,
``dimensions``, the served model name.

Every response goes through :func:`evalsuite.encode.response.parse_embeddings` before a vector
leaves this module, so a broken answer raises a typed ``EndpointError`` naming the item; bodies
are size-capped while decoding (:mod:`.body`); every socket operation obeys the deadline (:mod:`.http`).

Texts arrive rendered by the contract (prefixes applied). The API key is held
in a :class:`Secret`: it is sent in the ``Authorization`` header, never to a redirect target, and
is redacted from every message in any form (:mod:`.secret`).

One module, over 300 lines: one client class whose retry, deadline and redirect handling wrap every request;
its parts already live beside it (:mod:`.http`, :mod:`.body`, :mod:`.response`, :mod:`.endpoint_config`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json as _json
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any, Self

import numpy as np

from .base import EncodeStats, ServedEncoder
from .body import (
    ACCEPT_ENCODING,
    EndpointResponse,
    ResponseDecodingError,
    ResponseTooLarge,
    body_cap,
    read_body,
)
from .endpoint_config import EndpointConfig, base_url
from .http import (
    NO_HEADERS,
    Deadline,
    EndpointAuthError,
    EndpointConnectionDropped,
    EndpointDeadlineExceeded,
    EndpointHTTPError,
    EndpointRedirect,
    EndpointTimeout,
    EndpointUnreachable,
    _Scope,
    make_transport,
    transport_failure,
)
from .response import (
    Expectation,
    ResponseFormatError,
    ServerReportedError,
    label_items,
    load_json,
    parse_embeddings,
    server_error_message,
)
from .secret import Secret, cut, redact

__all__ = [
    "Deadline",
    "EndpointAuthError",
    "EndpointConfig",
    "EndpointConnectionDropped",
    "EndpointDeadlineExceeded",
    "EndpointEncoder",
    "EndpointHTTPError",
    "EndpointRedirect",
    "EndpointResponse",
    "EndpointTimeout",
    "EndpointUnreachable",
    "ResponseDecodingError",
    "ResponseTooLarge",
    "Secret",
    "base_url",
]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


# -- the client -----------------------------------------------------------------------------------
class EndpointEncoder(ServedEncoder):
    """An :class:`~evalsuite.encode.base.Encoder` backed by a served ``/v1/embeddings`` endpoint.

    Each request ends within ``config.timeout`` seconds in all (connect, headers, body), and none
    runs past ``deadline`` (an overall :class:`Deadline`, e.g. the canary's) when one is set.
    """

    device = "endpoint"

    def __init__(
        self,
        config: EndpointConfig,
        expect: Expectation,
        *,
        client: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        deadline: Deadline | None = None,
    ) -> None:
        import httpx

        self.config = config
        self.expect = dataclasses.replace(expect, encoding_format=config.encoding_format)
        self.deadline = deadline
        self.stats_by_role: dict[str, EncodeStats] = {}
        self.requests = 0
        self.retries = 0
        self._sleep = sleep
        self._own_client = client is None
        t = config.timeout
        self._client = client or httpx.Client(
            timeout=httpx.Timeout(connect=t, read=t, write=t, pool=t),
            follow_redirects=False,
            trust_env=False,
            transport=make_transport(config.concurrency + 1, config.concurrency),
        )

    def __repr__(self) -> str:
        return f"EndpointEncoder(url={self.config.url!r}, model={self.config.model!r})"

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- HTTP -------------------------------------------------------------------------------------
    def headers(self, *, auth: bool = True) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json", "Accept-Encoding": ACCEPT_ENCODING}
        if auth and self.config.api_key is not None:
            h["Authorization"] = "Bearer " + self.config.api_key.reveal()
        return h

    def _redact(self, text: str) -> str:
        return redact(self.config.api_key.redact(text) if self.config.api_key is not None else text)

    def response_cap(self, json: object = None) -> int:
        """The decoded-size cap for the answer to a request carrying ``json``."""
        if self.config.max_response_bytes is not None:
            return self.config.max_response_bytes
        n, dim = 0, self.expect.dim
        if isinstance(json, dict):
            inputs = json.get("input")
            n = len(inputs) if isinstance(inputs, list) else 1
            if isinstance(json.get("dimensions"), int):
                dim = max(dim, json["dimensions"])
        return body_cap(n, dim, self.config.encoding_format)

    def request(
        self,
        method: str,
        url: str,
        *,
        json: object = None,
        auth: bool = True,
        headers: dict[str, str] | None = None,
        retry: bool = True,
        what: str = "",
    ) -> EndpointResponse:
        """One HTTP call with bounded retries (429/5xx and dropped connections), each attempt within
        ``config.timeout`` in all; returns the complete, size-checked answer. ``what`` names the
        request in messages (e.g. the batch). Redirects raise EndpointRedirect (never followed)."""
        import httpx

        label = f"{method} {url}" + (f" ({what})" if what else "")
        attempts = self.config.max_retries + 1 if retry else 1
        cap = self.response_cap(json)
        failure, dropped, hint = "", False, ""
        sent = _json.dumps(json).encode() if json is not None else None  # ASCII: lone surrogates survive
        for attempt in range(attempts):
            at, overall = self._attempt_deadline(label)
            self.requests += 1
            retry_after = None
            phase = NO_HEADERS
            try:
                with _Scope(at):
                    req = self._client.build_request(
                        method, url, content=sent, headers=headers or self.headers(auth=auth)
                    )
                    resp = self._client.send(req, stream=True)
                    phase = f"HTTP {resp.status_code} headers received, the body incomplete"
                    try:
                        content, truncated = read_body(resp, cap=cap, what=label)
                    finally:
                        resp.close()
            except httpx.TimeoutException as exc:  # the deadline (or the timeout) ran out: never retried
                raise self._timeout(label, phase, overall, exc) from None
            except httpx.TransportError as exc:  # refused, reset, dropped, broken HTTP: retried
                if time.monotonic() >= at:
                    raise self._timeout(label, phase, overall, exc) from None
                failure, hint, dropped = transport_failure(exc, phase)  # its text is cut, hence redacted
            else:
                answer = EndpointResponse(method, url, resp.status_code, resp.headers, content, label, truncated)
                if 300 <= resp.status_code < 400:
                    raise self._redirect(answer)
                if resp.status_code not in RETRY_STATUSES or attempt == attempts - 1:
                    return answer
                retry_after = resp.headers.get("retry-after")
            if attempt < attempts - 1:
                self._wait(attempt, retry_after, label)
                self.retries += 1
        # chained exceptions are dropped on purpose: httpx's carry the request and its headers
        cls = EndpointConnectionDropped if dropped else EndpointUnreachable
        raise cls(f"{label}: {failure} ({attempts} attempt(s)); {hint}")

    def _attempt_deadline(self, label: str) -> tuple[float, bool]:
        """When this attempt must end, and whether the overall deadline (not the timeout) sets it."""
        at = time.monotonic() + self.config.timeout
        if self.deadline is None or self.deadline.at >= at:
            return at, False
        if self.deadline.expired():
            raise EndpointDeadlineExceeded(f"{label}: not sent: {self.deadline.describe()} has run out")
        return self.deadline.at, True

    def _timeout(self, label: str, phase: str, overall: bool, exc: Exception) -> EndpointTimeout:
        import httpx

        if isinstance(exc, httpx.ConnectTimeout):
            phase = "could not connect"
        if overall and self.deadline is not None:
            return EndpointDeadlineExceeded(
                f"{label}: {self.deadline.describe()} ran out during this request ({phase})"
            )
        return EndpointTimeout(
            f"{label}: no answer within {self.config.timeout:g}s ({phase}; the deadline covers "
            f"the whole request; {type(exc).__name__}); raise --endpoint-timeout if the server is "
            "just slow"
        )

    def _redirect(self, resp: EndpointResponse) -> EndpointRedirect:
        target = resp.headers.get("location")
        where = f"to {cut(target)!r}" if target else "with no Location"
        return EndpointRedirect(
            f"{resp.what}: HTTP {resp.status_code} redirect {where}; redirects are not followed "
            "(the API key goes only to the configured address): point --endpoint at the "
            "final URL",
            resp.status_code,
        )

    def _wait(self, attempt: int, retry_after: str | None, label: str) -> None:
        delay = min(self.config.max_backoff, self.config.backoff * (2**attempt))
        delay *= 0.5 + random.random() / 2
        if retry_after:
            with contextlib.suppress(ValueError):
                delay = max(delay, min(float(retry_after), self.config.max_backoff))
        if self.deadline is not None and self.deadline.remaining() < delay:
            raise EndpointDeadlineExceeded(f"{label}: {self.deadline.describe()} runs out before the next retry")
        self._sleep(delay)

    def error_for(self, resp: EndpointResponse, what: str | None = None) -> EndpointHTTPError:
        """The typed error for a non-200 answer: status, the server's own message (or a snippet) and a hint."""
        what = what or resp.what
        if 300 <= resp.status_code < 400:
            return self._redirect(resp)
        body = ""
        with contextlib.suppress(ResponseFormatError):  # not JSON: quoted as text below
            body = server_error_message(load_json(resp.content, what)) or ""
        if not body:
            text = self._redact(resp.text)
            body = cut(text) if text.strip() else "(empty body)"
            if "json" not in resp.content_type and text.strip():
                body = f"{resp.content_type or 'no content type'}: {body}"
        cls = EndpointAuthError if resp.status_code in (401, 403) else EndpointHTTPError
        hint = {
            401: "; set the key's environment variable and pass --api-key-env NAME",
            403: "; the key is not allowed to use this endpoint",
            404: "; check the URL (the OpenAI base, e.g. http://host:8000/v1) and --served-model",
        }
        return cls(f"{what}: HTTP {resp.status_code}: {body}{hint.get(resp.status_code, '')}", resp.status_code)

    def get_json(self, url: str) -> object:
        """GET ``url`` as checked JSON (``/v1/models`` and ``/info`` checked for shape)."""
        resp = self.request("GET", url)
        if resp.status_code != 200:
            raise self.error_for(resp)
        return resp.checked_json(self.config.models_url)

    def parse_response(
        self, resp: EndpointResponse, labels: Sequence[str], *, dimensions: int | None = None, check_norm: bool = True
    ) -> np.ndarray:
        """Checked vectors from an ``/v1/embeddings`` answer (from :meth:`request`), in the configured
        encoding: a typed error for a non-200, a body that is not JSON, or any contract violation."""
        if resp.status_code != 200:
            raise self.error_for(resp)
        try:
            return parse_embeddings(resp.json(), labels, self.expect, dimensions=dimensions, check_norm=check_norm)
        except ServerReportedError as exc:  # name the request: the error is about it, not about an item
            raise ServerReportedError(f"{resp.what}: HTTP {resp.status_code}: {exc}") from None

    def payload(self, texts: Sequence[str], dimensions: int | None = None) -> dict[str, object]:
        body: dict[str, object] = {"input": list(texts), "encoding_format": self.config.encoding_format}
        if self.config.model:
            body["model"] = self.config.model
        if dimensions:
            body["dimensions"] = int(dimensions)
        return body

    # -- embeddings -------------------------------------------------------------------------------
    def _post_batch(
        self, texts: Sequence[str], labels: Sequence[str], dimensions: int | None, check_norm: bool, what: str
    ) -> np.ndarray:
        resp = self.request("POST", self.config.embeddings_url, json=self.payload(texts, dimensions), what=what)
        return self.parse_response(resp, labels, dimensions=dimensions, check_norm=check_norm)

    def embed(
        self,
        texts: Sequence[str],
        *,
        ids: Sequence[str] | None = None,
        dimensions: int | None = None,
        batch_size: int | None = None,
        check_norm: bool = True,
        sort_by_length: bool = True,
    ) -> np.ndarray:
        """Checked vectors for ``texts`` as sent (no prefix added), float32 rows in input order."""
        n = len(texts)
        want = dimensions or self.expect.dim
        if n == 0:
            return np.zeros((0, want), dtype=np.float32)
        labels = label_items(texts, ids)
        order = sorted(range(n), key=lambda i: len(texts[i])) if sort_by_length else list(range(n))
        size = batch_size or self.config.batch_size
        chunks = [order[i : i + size] for i in range(0, n, size)]
        out = np.empty((n, want), dtype=np.float32)
        failed = threading.Event()  # once a batch fails, batches not yet started are not sent

        def one(k: int, chunk: list[int]) -> None:
            if failed.is_set():
                return
            what = f"batch {k + 1} of {len(chunks)}: {len(chunk)} input(s), first {labels[chunk[0]]}"
            try:
                out[chunk] = self._post_batch(
                    [texts[i] for i in chunk], [labels[i] for i in chunk], dimensions, check_norm, what
                )
            except BaseException:
                failed.set()
                raise

        if len(chunks) == 1 or self.config.concurrency == 1:
            for k, chunk in enumerate(chunks):
                one(k, chunk)
            return out
        with ThreadPoolExecutor(max_workers=min(self.config.concurrency, len(chunks))) as pool:
            futures = [pool.submit(one, k, c) for k, c in enumerate(chunks)]
            _, pending = wait(futures, return_when=FIRST_EXCEPTION)
            for f in pending:
                f.cancel()
            for f in futures:
                if f.done() and not f.cancelled() and f.exception() is not None:
                    raise f.exception()  # type: ignore[misc]
        return out

    @property
    def requests_sent(self) -> int:
        return self.requests
