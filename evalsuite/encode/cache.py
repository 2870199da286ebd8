"""On-disk embedding cache (the encoder that consults it: :mod:`evalsuite.encode.cached`).

Layout: one shard directory per (model revision, tokenizer revision, dtype, max length,
truncation, pooling, prefix, role) under ``<root>/v1/<digest[:2]>/<digest>/``; inside, append-only
segment files, each holding many rows: a 16-byte BLAKE2b hash of the text and its pooled,
full-dimension float32 vector. Dimension and normalization are applied later, so one entry
serves every Matryoshka dimension. A query and a document with the same text live in
different shards (the role is part of the key).

Segment files: see :mod:`evalsuite.encode.segments` (hashes, vectors, token counts, truncation flags). A segment whose checksum, size or header does not verify is
reported (a :class:`CacheCorruptionWarning` and the ``corrupt`` counter), deleted, and its rows
are recomputed; it is never used. Segments are written atomically and named uniquely, so
concurrent writers (pytest-xdist workers) never clobber each other; a shard with many segments
is compacted into one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import uuid
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from ..base.errors import CacheError
from ..base.io import atomic_write_bytes, atomic_write_text
from .base import EncodeStats
from .segments import HASH_BYTES as _HASH
from .segments import Segment as _Segment
from .segments import decode_segment as _decode_segment
from .segments import encode_segment as _encode_segment

LAYOUT = "v1"
ENV_DIR = "EVALSUITE_CACHE_DIR"


class CacheCorruptionWarning(UserWarning):
    """A cache segment failed verification; it was discarded and its rows recomputed."""


def default_cache_dir() -> Path:
    """``$EVALSUITE_CACHE_DIR`` when set, else the user cache directory (platformdirs)."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("evalsuite")) / "embeddings"


def cache_root(configured: str | Path | None) -> Path:
    """The cache directory: ``configured`` (``--cache-dir``) when given, else :func:`default_cache_dir`."""
    return Path(configured).expanduser() if configured else default_cache_dir()


def text_hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=_HASH).digest()


class CacheKey(Protocol):
    """What names a shard: a dataclass (written to ``key.json`` and every segment header), its digest
    (the shard directory) and the float32 words of a row. :class:`ShardKey` for vectors; the reranker's
    score cache (:mod:`evalsuite.rerank.cache`) has its own."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def dim(self) -> int: ...

    def digest(self) -> str: ...


@dataclass(frozen=True)
class ShardKey:
    """Everything that changes a pooled vector, except the text itself."""

    model_revision: str
    tokenizer_revision: str
    dtype: str
    max_length: int
    truncation: str
    pooling: str
    role: str
    dim: int
    source: str = "local"  # who made the vectors: "local" (the reference model) or a served deployment's identity
    head: str = ""  # what a model family adds (ModelInfo.head_key: Dense heads' digests, include_prompt false)

    def digest(self) -> str:
        fields = asdict(self)
        if fields["source"] == "local":  # local keys stay what they were before served vectors were cached
            del fields["source"]
        if not fields["head"]:  # as do those of a plain encoder
            del fields["head"]
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:32]


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    rows_written: int = 0
    segments_written: int = 0
    compactions: int = 0

    def add(self, other: CacheStats) -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class CachedRows:
    """What :meth:`EmbeddingCache.lookup_rows` found, row by row."""

    vectors: np.ndarray
    found: np.ndarray
    tokens: np.ndarray
    truncated: np.ndarray


class EmbeddingCache:
    """Pooled full-dimension vectors on disk, by :class:`ShardKey` and text hash."""

    NAME = "embedding cache"  # how messages name this cache, and what its rows hold
    ROWS = "vectors"

    def __init__(self, root: str | Path | None = None, *, compact_at: int = 8, compact_rows: int = 65_536) -> None:
        self.root = cache_root(root)
        self.compact_at = compact_at
        self.compact_rows = compact_rows
        self.stats = CacheStats()
        self.problems: list[str] = []

    def shard_dir(self, key: CacheKey) -> Path:
        d = key.digest()
        return self.root / LAYOUT / d[:2] / d

    def _segments(self, key: CacheKey, paths: Sequence[Path] | None = None) -> Iterator[_Segment]:
        """The shard's verified segments, read one at a time (memory: one segment, not the shard)."""
        shard = self.shard_dir(key)
        if paths is None:
            paths = sorted(shard.glob("*.seg")) if shard.is_dir() else []
        for path in paths:
            try:
                data = path.read_bytes()
            except FileNotFoundError:  # compacted away by a concurrent writer
                continue
            try:
                yield _decode_segment(path, data, key)
            except (ValueError, KeyError, TypeError, json.JSONDecodeError, struct.error) as exc:
                self._corrupt(path, str(exc))

    def _corrupt(self, path: Path, reason: str) -> None:
        message = f"{self.NAME} segment {path} is unusable ({reason}); discarded it, its {self.ROWS} will be recomputed"
        self.stats.corrupt += 1
        self.problems.append(message)
        warnings.warn(message, CacheCorruptionWarning, stacklevel=3)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    def lookup(self, key: CacheKey, hashes: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors, found)``: rows for ``hashes`` (zeros where not found) and a boolean mask."""
        got = self.lookup_rows(key, hashes)
        return got.vectors, got.found

    def lookup_rows(self, key: CacheKey, hashes: Sequence[bytes]) -> CachedRows:
        """Vectors, found mask, token counts (-1 unknown or not found) and truncation flags for ``hashes``."""
        n = len(hashes)
        got = CachedRows(
            np.zeros((n, key.dim), dtype=np.float32),
            np.zeros(n, dtype=bool),
            np.full(n, -1, dtype=np.int32),
            np.zeros(n, dtype=bool),
        )
        wanted: dict[bytes, list[int]] = {}
        for i, h in enumerate(hashes):
            wanted.setdefault(h, []).append(i)
        small: list[Path] = []
        if n:
            for seg in self._segments(key):
                if len(seg.hashes) < self.compact_rows:
                    small.append(seg.path)
                raw = seg.hashes.tobytes()
                src: list[int] = []
                dst: list[int] = []
                for row in range(len(seg.hashes)):
                    targets = wanted.pop(raw[row * _HASH : (row + 1) * _HASH], None)
                    if targets is not None:
                        src.extend([row] * len(targets))
                        dst.extend(targets)
                if dst:
                    got.vectors[dst] = seg.vectors[src]
                    got.found[dst] = True
                    got.tokens[dst] = seg.tokens[src]
                    got.truncated[dst] = seg.truncated[src]
        hits = int(got.found.sum())
        self.stats.hits += hits
        self.stats.misses += n - hits
        if len(small) > self.compact_at:
            # a read-only or full cache still serves reads; compaction waits for a writable one
            with contextlib.suppress(OSError):
                self._compact(key, list(self._segments(key, small)))
        return got

    def store(
        self,
        key: CacheKey,
        hashes: Sequence[bytes],
        vectors: np.ndarray,
        tokens: np.ndarray | None = None,
        truncated: np.ndarray | None = None,
    ) -> None:
        """Append rows; ``tokens``/``truncated`` (per row) let a warm run report what a cold one did."""
        if not len(hashes):
            return
        if vectors.shape != (len(hashes), key.dim):
            raise ValueError(f"cache store: vectors of shape {vectors.shape} for {len(hashes)} texts of dim {key.dim}")
        shard = self.shard_dir(key)
        try:
            if not (shard / "key.json").is_file():
                atomic_write_text(shard / "key.json", json.dumps(asdict(key), indent=2) + "\n")
            atomic_write_bytes(
                shard / f"{uuid.uuid4().hex}.seg", _encode_segment(key, hashes, vectors, tokens, truncated)
            )
        except OSError as exc:
            raise CacheError(
                f"cannot write to the {self.NAME} {self.root} ({exc.strerror or exc}); free disk "
                "space or make it writable, point --cache-dir (or $EVALSUITE_CACHE_DIR) elsewhere, "
                "or run with --no-cache"
            ) from exc
        self.stats.rows_written += len(hashes)
        self.stats.segments_written += 1

    def _compact(self, key: CacheKey, segments: list[_Segment]) -> None:
        """Merge small segments into one (segments of ``compact_rows`` rows or more are left alone, so a
        compaction never holds more than ``compact_at`` small segments)."""
        rows: dict[bytes, tuple[_Segment, int]] = {}
        for seg in segments:
            raw = seg.hashes.tobytes()
            for row in range(len(seg.hashes)):
                rows[raw[row * _HASH : (row + 1) * _HASH]] = (seg, row)
        hashes = list(rows)
        picks = [rows[h] for h in hashes]
        atomic_write_bytes(
            self.shard_dir(key) / f"{uuid.uuid4().hex}.seg",
            _encode_segment(
                key,
                hashes,
                np.stack([s.vectors[r] for s, r in picks]),
                np.array([s.tokens[r] for s, r in picks], dtype=np.int32),
                np.array([s.truncated[r] for s, r in picks], dtype=bool),
            ),
        )
        for seg in segments:
            with contextlib.suppress(FileNotFoundError):
                seg.path.unlink()
        self.stats.compactions += 1


def cache_summary(encoders: Sequence[object]) -> dict[str, int] | None:
    """Summed cache counters over the encoders that have a cache (None when none does)."""
    seen: dict[int, CacheStats] = {}
    for enc in encoders:
        if isinstance(enc, Caching):
            seen[id(enc.cache)] = enc.cache.stats
    if not seen:
        return None
    total = CacheStats()
    for s in seen.values():
        total.add(s)
    return total.to_dict()


@runtime_checkable
class Caching(Protocol):
    """An encoder in front of an embedding cache: ``cached_by_role`` counts the texts served from it,
    ``loads`` the times the model was built."""

    cache: EmbeddingCache
    cached_by_role: dict[str, EncodeStats]
    loads: int

    @property
    def cache_stats(self) -> CacheStats: ...
