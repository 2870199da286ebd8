"""An encoder that serves vectors from the embedding cache and runs the model only for what it lacks.

The model is built on the first miss, never before: a warm run imports no model stack. Fresh rows are
streamed from the model encoder and stored every ``flush_rows`` rows, so a failure (an actor that
dies, a killed process) keeps what was finished and a re-run resumes from it. Token counts and
truncations are stored with each row, so a warm run reports them without a tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..base.errors import ExecutorError
from ..model import ModelInfo
from .base import Describing, EncodedRows, Encoder, EncodeStats, ExecutorReporting, Releasable, RowStreaming
from .cache import CachedRows, CacheStats, EmbeddingCache, ShardKey, text_hash
from .settings import EncoderSettings


class CachedEncoder:
    """An :class:`Encoder` that serves pooled vectors from an :class:`EmbeddingCache` and runs the
    model (built by ``factory`` on the first miss, never before) only for the texts it lacks. ``settings``: the
    run's :class:`~evalsuite.encode.settings.EncoderSettings` (``device`` ``endpoint`` for a served deployment)."""

    def __init__(
        self,
        cache: EmbeddingCache,
        info: ModelInfo,
        *,
        settings: EncoderSettings,
        factory: Callable[[], Encoder],
        flush_rows: int = 8192,
        source: str = "local",
        dim: int | None = None,
        describe: Callable[[], dict[str, object]] | None = None,
    ) -> None:
        self.cache = cache
        self.info = info
        self.settings = settings  # its dtype, max length and truncation key the cache; ``device`` the one asked for
        self.dtype = settings.dtype
        self.max_length = settings.max_length or info.default_max_length
        self.truncation = settings.truncation
        self._device = settings.device
        self._factory = factory
        self._inner: Encoder | None = None
        self._stats: dict[str, EncodeStats] = {}
        self.loads = 0
        self.flush_rows = flush_rows
        self.source = source  # part of every key: served vectors never share entries with local ones
        self.dim = dim or info.hidden_size
        self._describe = describe
        self.cached_by_role: dict[str, EncodeStats] = {}

    def manifest_entry(self) -> dict[str, object]:
        """Who makes the vectors (the manifest's ``encoder`` section), with or without a cache miss."""
        if self._describe is not None:
            return self._describe()
        return dict(self._inner.manifest_entry()) if isinstance(self._inner, Describing) else {"kind": "local"}

    def executor_report(self) -> dict[str, Any]:
        """The model encoder's executor report (empty when none was built or it runs in this process)."""
        return self._inner.executor_report() if isinstance(self._inner, ExecutorReporting) else {}

    @property
    def model_loaded(self) -> bool:
        return self._inner is not None

    @property
    def inner(self) -> Encoder:
        """The model encoder, built on first use (a warm cache never builds it)."""
        if self._inner is None:
            self._inner = self._factory()
            self._inner.stats_by_role.update({r: s.copy() for r, s in self._stats.items()})
            self.loads += 1
        return self._inner

    def release(self) -> None:
        """Free the model; counters and the cache stay usable, a later miss loads it again."""
        if self._inner is not None:
            self._stats = {r: s.copy() for r, s in self.stats_by_role.items()}
            if isinstance(self._inner, Releasable):
                self._inner.release()
            self._inner = None

    @property
    def device(self) -> str:
        if self.source != "local":
            return "endpoint"
        if self._inner is not None:
            return self._inner.device
        if self._device == "cpu" or self._device.startswith("cuda"):
            return self._device
        # no model was loaded: every vector came from the cache, and resolving "auto" would import torch
        return "cache"

    @property
    def stats_by_role(self) -> dict[str, EncodeStats]:
        """Counters of the texts that went through the model (cache hits are not counted)."""
        return self._inner.stats_by_role if self._inner is not None else self._stats

    @property
    def cache_stats(self) -> CacheStats:
        return self.cache.stats

    def key(self, pooling: str, role: str) -> ShardKey:
        return ShardKey(
            model_revision=self.info.revision,
            tokenizer_revision=self.info.tokenizer_revision,
            dtype=self.dtype,
            max_length=self.max_length,
            truncation=self.truncation,
            pooling=pooling,
            role=role,
            dim=self.dim,
            source=self.source,
            head=self.info.head_key(),
        )

    def encode(
        self,
        texts: Sequence[str],
        *,
        poolings: Sequence[str] = ("mean",),
        ids: Sequence[str] | None = None,
        role: str = "document",
    ) -> dict[str, np.ndarray]:
        """Vectors per pooling from the cache; the model encodes only the missing rows, and its results are
        stored every ``flush_rows`` rows, so a failure keeps what was finished."""
        poolings = list(dict.fromkeys(poolings))
        hashes = [text_hash(t) for t in texts]
        out: dict[str, np.ndarray] = {}
        missing_by_pooling: dict[str, np.ndarray] = {}
        served: CachedRows | None = None
        for p in poolings:
            got = self.cache.lookup_rows(self.key(p, role), hashes)
            served = served or got
            out[p] = got.vectors
            if not got.found.all():
                missing_by_pooling[p] = ~got.found
        any_missing = (
            np.logical_or.reduce(list(missing_by_pooling.values()))
            if missing_by_pooling
            else np.zeros(len(texts), dtype=bool)
        )
        if served is not None:
            self._count_hits(role, served, ~any_missing)
        if not missing_by_pooling:
            return out
        rows = np.flatnonzero(any_missing)
        sub_texts = [texts[int(i)] for i in rows]
        sub_ids = [ids[int(i)] for i in rows] if ids is not None else None
        pending: list[EncodedRows] = []
        kept = 0

        def flush() -> None:
            nonlocal pending, kept
            if not pending:
                return
            sub = np.concatenate([part.rows for part in pending])
            kept += len(sub)
            tokens = np.concatenate([part.tokens for part in pending])
            truncated = np.concatenate([part.truncated for part in pending])
            for p, missing in missing_by_pooling.items():
                vectors = np.concatenate([part.vectors[p] for part in pending])
                keep = missing[rows[sub]]
                out[p][rows[sub[keep]]] = vectors[keep]
                self.cache.store(
                    self.key(p, role),
                    [hashes[i] for i in rows[sub[keep]]],
                    vectors[keep],
                    tokens[keep],
                    truncated[keep],
                )
            pending = []

        try:
            for part in self._stream(sub_texts, list(missing_by_pooling), sub_ids, role):
                pending.append(part)
                if sum(len(x.rows) for x in pending) >= self.flush_rows:
                    flush()
        except BaseException as exc:
            flush()  # what was finished stays in the cache: a re-run resumes from it
            if isinstance(exc, ExecutorError):
                raise ExecutorError(
                    f"{exc}; the finished vectors ({kept} of the {len(rows)} {role} texts this call encoded) are "
                    f"in the embedding cache {self.cache.root}: a re-run resumes from them"
                ) from exc
            raise
        flush()
        return out

    def _stream(self, texts: list[str], poolings: list[str], ids: list[str] | None, role: str) -> Iterator[EncodedRows]:
        inner = self.inner
        if isinstance(inner, RowStreaming):
            yield from inner.encode_stream(texts, poolings=poolings, ids=ids, role=role)
            return
        whole = self.inner.encode(texts, poolings=poolings, ids=ids, role=role)  # no per-row token counts
        yield EncodedRows(
            np.arange(len(texts)), whole, np.full(len(texts), -1, dtype=np.int32), np.zeros(len(texts), dtype=bool)
        )

    def _count_hits(self, role: str, served: CachedRows, rows: np.ndarray) -> None:
        """Texts served from the cache, with the token counts and truncations stored when they were encoded."""
        stats = self.cached_by_role.setdefault(role, EncodeStats())
        known = rows & (served.tokens >= 0)
        stats.texts += int(rows.sum())
        stats.tokens += int(served.tokens[known].sum())
        stats.truncated += int(served.truncated[rows].sum())
