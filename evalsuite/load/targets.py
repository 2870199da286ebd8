"""What a load request is sent to: a served endpoint (through the project's endpoint client) or the
local reference encoder in this process. ``send`` never raises for a failed request: it answers
``("ok" | "429" | "error", detail)`` so the runner can count failures beside latencies.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..base.errors import EndpointError, EvalsuiteError

if TYPE_CHECKING:
    from ..encode.base import Encoder
    from ..encode.endpoint import EndpointConfig, EndpointEncoder
    from ..run.pipeline import Prepared

Outcome = tuple[str, str]


class Target(Protocol):
    name: str

    def send(self, texts: Sequence[str]) -> Outcome: ...

    def close(self) -> None: ...


class EndpointTarget:
    """One ``POST {url}/embeddings`` per request via :class:`EndpointEncoder`, with no retry, so a 429
    or a 5xx is counted as the server gave it. Every 200 is parsed and checked like the canary does
    (count, order, dimension, norm): a malformed answer counts as an error, not as throughput."""

    def __init__(self, name: str, config: EndpointConfig, *, dim: int, normalized: bool, max_concurrency: int) -> None:
        from ..encode.endpoint import EndpointEncoder
        from ..encode.response import Expectation

        self.name = name
        models = frozenset({config.model}) if config.model else frozenset()
        # the client's connection pool must hold every request of the highest level in flight
        config = dataclasses.replace(config, concurrency=max(config.concurrency, max_concurrency))
        self.client: EndpointEncoder = EndpointEncoder(
            config, Expectation(dim=dim, normalized=normalized, models=models)
        )

    def __repr__(self) -> str:
        return f"EndpointTarget({self.name!r}, url={self.client.config.url!r})"

    def send(self, texts: Sequence[str]) -> Outcome:
        from ..encode.response import label_items

        c = self.client
        try:
            resp = c.request(
                "POST",
                c.config.embeddings_url,
                json=c.payload(texts),
                retry=False,
                what=f"POST {c.config.embeddings_url} ({len(texts)} input(s))",
            )
            if resp.status_code == 429:
                return "429", "HTTP 429"
            c.parse_response(resp, label_items(texts, None))  # a typed error for any non-200 or bad answer
        except EndpointError as exc:
            return "error", str(exc)
        return "ok", ""

    def close(self) -> None:
        self.client.close()


class EncoderTarget:
    """The local reference encoder as a load target. One model in one process runs one batch at a
    time (a lock): concurrency then shows queueing, which is what a single in-process model does."""

    def __init__(self, name: str, encoder: Encoder, pooling: str) -> None:
        self.name = name
        self.encoder = encoder
        self.pooling = pooling
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"EncoderTarget({self.name!r}, device={self.encoder.device!r})"

    def send(self, texts: Sequence[str]) -> Outcome:
        try:
            with self._lock:
                self.encoder.encode(list(texts), poolings=[self.pooling], role="document")
        except EvalsuiteError as exc:
            return "error", str(exc)
        return "ok", ""

    def close(self) -> None:
        pass


def local_target(prepared: Prepared, name: str = "local") -> EncoderTarget:
    """The reference encoder of ``prepared`` without the embedding cache (a cache hit is not capacity)
    and without per-call progress bars (the load runner shows its own)."""
    from ..run.pipeline import make_encoder

    uncached = dataclasses.replace(prepared, spec=prepared.spec.replace(use_cache=False))
    encoder = make_encoder(uncached)
    if hasattr(encoder, "progress"):
        encoder.progress = False
    return EncoderTarget(name, encoder, prepared.contract.pooling)
