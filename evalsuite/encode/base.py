"""The encoder interface shared by the local reference and the endpoint client."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ..base.counters import Counters

if TYPE_CHECKING:
    from ..model import ModelInfo


@dataclass
class EncodeStats(Counters):
    """Counters accumulated over an encoder's calls."""

    texts: int = 0
    tokens: int = 0
    padded_tokens: int = 0
    truncated: int = 0
    batches: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class EncodedRows:
    """Part of a streamed encode: ``rows`` index the call's texts; per row its vector per pooling, its
    token count (after truncation) and whether it was truncated."""

    rows: np.ndarray
    vectors: dict[str, np.ndarray]
    tokens: np.ndarray
    truncated: np.ndarray


def gather(parts: Iterable[EncodedRows], n: int, dim: int, poolings: Sequence[str]) -> dict[str, np.ndarray]:
    """The vectors of a streamed encode of ``n`` texts, per pooling, rows back in input order."""
    out = {p: np.zeros((n, dim), dtype=np.float32) for p in poolings}
    for part in parts:
        for p in poolings:
            out[p][part.rows] = part.vectors[p]
    return out


class StreamingEncoder:
    """An encoder that computes its rows batch by batch (:meth:`encode_stream`, in any order);
    :meth:`encode` gathers them back in input order. The local reference and the Ray encoder."""

    info: ModelInfo

    def encode_stream(
        self,
        texts: Sequence[str],
        *,
        poolings: Sequence[str] = ("mean",),
        ids: Sequence[str] | None = None,
        role: str = "document",
    ) -> Iterator[EncodedRows]:
        raise NotImplementedError

    def encode(
        self,
        texts: Sequence[str],
        *,
        poolings: Sequence[str] = ("mean",),
        ids: Sequence[str] | None = None,
        role: str = "document",
    ) -> dict[str, np.ndarray]:
        """Pooled full-dimension float32 vectors (not normalized) per pooling, rows in input order."""
        poolings = list(dict.fromkeys(poolings))
        parts = self.encode_stream(texts, poolings=poolings, ids=ids, role=role)
        return gather(parts, len(texts), self.info.hidden_size, poolings)


class ServedEncoder:
    """An encoder whose server pools its own way (one endpoint, or a fleet of them): :meth:`encode` takes exactly
    one pooling name, gets the vectors from :meth:`embed` and counts the requests that sent them per role."""

    stats_by_role: dict[str, EncodeStats]

    @property
    def requests_sent(self) -> int:
        """Embedding requests sent so far (every URL)."""
        raise NotImplementedError

    def embed(self, texts: list[str], *, ids: list[str] | None = None) -> np.ndarray:
        raise NotImplementedError

    def encode(
        self,
        texts: Sequence[str],
        *,
        poolings: Sequence[str] = ("mean",),
        ids: Sequence[str] | None = None,
        role: str = "document",
    ) -> dict[str, np.ndarray]:
        """The Encoder protocol: the vectors as served, under the one pooling name asked for."""
        from ..base.errors import SpecError

        poolings = list(dict.fromkeys(poolings))
        if len(poolings) != 1:
            raise SpecError(f"a served model pools one way; asked for {len(poolings)} poolings {poolings}")
        t0 = time.perf_counter()
        before = self.requests_sent
        vectors = self.embed(list(texts), ids=list(ids) if ids is not None else None)
        stats = EncodeStats(texts=len(texts), batches=self.requests_sent - before, seconds=time.perf_counter() - t0)
        self.stats_by_role.setdefault(role, EncodeStats()).add(stats)
        return {poolings[0]: vectors}


class Encoder(Protocol):
    """Turns texts into pooled, full-dimension float32 vectors, one row per text, in input order.

    ``texts`` are model inputs as :meth:`Contract.render` made them (prefixes and templates are the
    contract's business, never the encoder's). Pooling is chosen per
    call so that one forward pass can serve several poolings. ``stats_by_role`` accumulates
    counters per role ("query", "document") over all calls.
    """

    @property
    def device(self) -> str: ...

    @property
    def stats_by_role(self) -> dict[str, EncodeStats]: ...

    def encode(
        self, texts: Sequence[str], *, poolings: Sequence[str], ids: Sequence[str] | None = None, role: str = "document"
    ) -> dict[str, np.ndarray]: ...


# Optional encoder features, each a runtime-checkable capability: ``isinstance(encoder, Releasable)`` etc.


@runtime_checkable
class Releasable(Protocol):
    """An encoder that can free the model it holds (its counters, and cache, stay readable)."""

    def release(self) -> None: ...


@runtime_checkable
class Describing(Protocol):
    """An encoder that says who makes its vectors: the manifest's ``encoder`` section."""

    def manifest_entry(self) -> Mapping[str, object]: ...


@runtime_checkable
class Dimensioned(Protocol):
    """An encoder whose vectors may have fewer columns than the model's hidden size."""

    @property
    def dim(self) -> int: ...


@runtime_checkable
class RowStreaming(Protocol):
    """An encoder that yields its rows batch by batch (:class:`StreamingEncoder` and its kin)."""

    def encode_stream(
        self, texts: Sequence[str], *, poolings: Sequence[str], ids: Sequence[str] | None, role: str
    ) -> Iterator[EncodedRows]: ...


@runtime_checkable
class ExecutorReporting(Protocol):
    """An encoder that runs beyond this process (a Ray cluster): ``{"timing": {...}, "nodes": [...]}``, counted since
    it was built (empty when it ran nothing): seconds waiting for resources, loading, encoding, transferring; per
    node its ``node_id``, ``address``, ``resources``, ``rows`` and ``seconds``."""

    def executor_report(self) -> dict[str, Any]: ...
