"""On-disk embedding cache, and an encoder that consults it before running the model.

Layout: one shard directory per (model revision, tokenizer revision, dtype, max length,
truncation, pooling, prefix, role) under ``<root>/v1/<digest[:2]>/<digest>/``; inside, append-only
segment files, each holding many rows: a 16-byte BLAKE2b hash of the text and its pooled,
full-dimension float32 vector. Dimension and normalization are applied later, so one entry
serves every Matryoshka dimension. A query and a document with the same text live in
different shards (the role is part of the key).

Segment file: ``MAGIC | u32 header length | JSON header | n×16 hash bytes | n×dim float32 |
sha256 of everything before``. A segment whose checksum, size or header does not verify is
reported (a :class:`CacheCorruptionWarning` and the ``corrupt`` counter), deleted, and its rows
are recomputed; it is never used. Segments are written atomically and named uniquely, so
concurrent writers (pytest-xdist workers) never clobber each other; a shard with many segments
is compacted into one.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import uuid
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import CacheError, ExecutorError
from ..io import atomic_write_bytes, atomic_write_text
from ..model import ModelInfo
from .base import EncodeStats, Encoder

MAGIC = b"EVSCACHE1\n"
LAYOUT = "v1"
_HASH = 16
_SUM = 32
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


def text_hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=_HASH).digest()


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

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:32]


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    rows_written: int = 0
    segments_written: int = 0
    compactions: int = 0

    def add(self, other: "CacheStats") -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class _Segment:
    path: Path
    hashes: np.ndarray  # (n, 16) uint8
    vectors: np.ndarray  # (n, dim) float32


def _encode_segment(key: ShardKey, hashes: Sequence[bytes], vectors: np.ndarray) -> bytes:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    header = json.dumps({"n": len(hashes), "dim": int(vectors.shape[1]), "key": asdict(key)},
                        sort_keys=True).encode()
    body = b"".join([MAGIC, struct.pack("<I", len(header)), header, b"".join(hashes), vectors.tobytes()])
    return body + hashlib.sha256(body).digest()


def _decode_segment(path: Path, data: bytes, key: ShardKey) -> _Segment:
    """Parse and verify one segment; ``ValueError`` says what is wrong with it."""
    if len(data) < len(MAGIC) + 4 + _SUM or not data.startswith(MAGIC):
        raise ValueError("not a cache segment or truncated before its header")
    body, checksum = data[:-_SUM], data[-_SUM:]
    if hashlib.sha256(body).digest() != checksum:
        raise ValueError("checksum mismatch (corrupted or truncated)")
    (hlen,) = struct.unpack_from("<I", data, len(MAGIC))
    start = len(MAGIC) + 4
    header = json.loads(data[start:start + hlen])
    n, dim = int(header["n"]), int(header["dim"])
    if header.get("key") != asdict(key) or dim != key.dim:
        raise ValueError("segment belongs to another cache key")
    off = start + hlen
    if len(body) != off + n * _HASH + n * dim * 4:
        raise ValueError("size does not match its header")
    hashes = np.frombuffer(data, dtype=np.uint8, count=n * _HASH, offset=off).reshape(n, _HASH)
    vectors = np.frombuffer(data, dtype=np.float32, count=n * dim, offset=off + n * _HASH).reshape(n, dim)
    return _Segment(path, hashes, vectors)


class EmbeddingCache:
    """Pooled full-dimension vectors on disk, by :class:`ShardKey` and text hash."""

    def __init__(self, root: str | Path | None = None, *, compact_at: int = 8) -> None:
        self.root = Path(root).expanduser() if root else default_cache_dir()
        self.compact_at = compact_at
        self.stats = CacheStats()
        self.problems: list[str] = []

    def shard_dir(self, key: ShardKey) -> Path:
        d = key.digest()
        return self.root / LAYOUT / d[:2] / d

    def _segments(self, key: ShardKey) -> list[_Segment]:
        shard = self.shard_dir(key)
        if not shard.is_dir():
            return []
        out = []
        for path in sorted(shard.glob("*.seg")):
            try:
                data = path.read_bytes()
            except FileNotFoundError:  # compacted away by a concurrent writer
                continue
            try:
                out.append(_decode_segment(path, data, key))
            except (ValueError, KeyError, TypeError, json.JSONDecodeError, struct.error) as exc:
                self._corrupt(path, str(exc))
        return out

    def _corrupt(self, path: Path, reason: str) -> None:
        message = (f"embedding cache segment {path} is unusable ({reason}); discarded it, its vectors will be "
                   "recomputed")
        self.stats.corrupt += 1
        self.problems.append(message)
        warnings.warn(message, CacheCorruptionWarning, stacklevel=3)
        try:
            path.unlink()
        except FileNotFoundError:
            pass

    def lookup(self, key: ShardKey, hashes: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors, found)``: rows for ``hashes`` (zeros where not found) and a boolean mask."""
        n = len(hashes)
        vectors = np.zeros((n, key.dim), dtype=np.float32)
        found = np.zeros(n, dtype=bool)
        segments = self._segments(key)
        if segments and n:
            wanted: dict[bytes, list[int]] = {}
            for i, h in enumerate(hashes):
                wanted.setdefault(h, []).append(i)
            for seg in segments:
                raw = seg.hashes.tobytes()
                src: list[int] = []
                dst: list[int] = []
                for row in range(len(seg.hashes)):
                    targets = wanted.pop(raw[row * _HASH:(row + 1) * _HASH], None)
                    if targets is not None:
                        src.extend([row] * len(targets))
                        dst.extend(targets)
                if dst:
                    vectors[dst] = seg.vectors[src]
                    found[dst] = True
                if not wanted:
                    break
        hits = int(found.sum())
        self.stats.hits += hits
        self.stats.misses += n - hits
        if len(segments) > self.compact_at:
            try:
                self._compact(key, segments)
            except OSError:  # a read-only or full cache still serves reads; compaction waits for a writable one
                pass
        return vectors, found

    def store(self, key: ShardKey, hashes: Sequence[bytes], vectors: np.ndarray) -> None:
        if not len(hashes):
            return
        if vectors.shape != (len(hashes), key.dim):
            raise ValueError(f"cache store: vectors of shape {vectors.shape} for {len(hashes)} texts of dim {key.dim}")
        shard = self.shard_dir(key)
        try:
            if not (shard / "key.json").is_file():
                atomic_write_text(shard / "key.json", json.dumps(asdict(key), indent=2) + "\n")
            atomic_write_bytes(shard / f"{uuid.uuid4().hex}.seg", _encode_segment(key, hashes, vectors))
        except OSError as exc:
            raise CacheError(f"cannot write to the embedding cache {self.root} ({exc.strerror or exc}); free disk "
                             "space or make it writable, point --cache-dir (or $EVALSUITE_CACHE_DIR) elsewhere, "
                             "or run with --no-cache") from exc
        self.stats.rows_written += len(hashes)
        self.stats.segments_written += 1

    def _compact(self, key: ShardKey, segments: list[_Segment]) -> None:
        rows: dict[bytes, np.ndarray] = {}
        for seg in segments:
            raw = seg.hashes.tobytes()
            for row in range(len(seg.hashes)):
                rows[raw[row * _HASH:(row + 1) * _HASH]] = seg.vectors[row]
        hashes = list(rows)
        atomic_write_bytes(self.shard_dir(key) / f"{uuid.uuid4().hex}.seg",
                           _encode_segment(key, hashes, np.stack([rows[h] for h in hashes])))
        for seg in segments:
            try:
                seg.path.unlink()
            except FileNotFoundError:
                pass
        self.stats.compactions += 1


class CachedEncoder:
    """An :class:`Encoder` that serves pooled vectors from an :class:`EmbeddingCache` and runs the
    model (built by ``factory`` on the first miss, never before) only for the texts it lacks."""

    def __init__(self, cache: EmbeddingCache, info: ModelInfo, *, dtype: str, max_length: int, truncation: str,
                 device: str, factory: Callable[[], Encoder], flush_rows: int = 8192) -> None:
        self.cache = cache
        self.info = info
        self.dtype = dtype
        self.max_length = max_length
        self.truncation = truncation
        self._device = device
        self._factory = factory
        self._inner: Encoder | None = None
        self._stats: dict[str, EncodeStats] = {}
        self.loads = 0
        self.flush_rows = flush_rows

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
            release = getattr(self._inner, "release", None)
            if callable(release):
                release()
            self._inner = None

    @property
    def device(self) -> str:  # type: ignore[override]
        if self._inner is not None:
            return self._inner.device
        if self._device == "cpu" or self._device.startswith("cuda"):
            return self._device
        # no model was loaded: every vector came from the cache, and resolving "auto" would import torch
        return "cache"

    @property
    def stats_by_role(self) -> dict[str, EncodeStats]:  # type: ignore[override]
        """Counters of the texts that went through the model (cache hits are not counted)."""
        return self._inner.stats_by_role if self._inner is not None else self._stats

    @property
    def cache_stats(self) -> CacheStats:
        return self.cache.stats

    def key(self, pooling: str, role: str) -> ShardKey:
        return ShardKey(model_revision=self.info.revision, tokenizer_revision=self.info.tokenizer_revision,
                        dtype=self.dtype, max_length=self.max_length, truncation=self.truncation,
                        pooling=pooling, role=role, dim=self.info.hidden_size)

    def encode(self, texts: Sequence[str], *, poolings: Sequence[str] = ("mean",),
               ids: Sequence[str] | None = None, role: str = "document") -> dict[str, np.ndarray]:
        poolings = list(dict.fromkeys(poolings))
        hashes = [text_hash(t) for t in texts]
        out: dict[str, np.ndarray] = {}
        missing_by_pooling: dict[str, np.ndarray] = {}
        for p in poolings:
            vectors, found = self.cache.lookup(self.key(p, role), hashes)
            out[p] = vectors
            if not found.all():
                missing_by_pooling[p] = ~found
        if not missing_by_pooling:
            return out
        any_missing = np.logical_or.reduce(list(missing_by_pooling.values()))
        rows = np.flatnonzero(any_missing)
        sub_texts = [texts[i] for i in rows]
        sub_ids = [ids[i] for i in rows] if ids is not None else None
        inner = self.inner
        stream = getattr(inner, "encode_stream", None)
        if callable(stream):
            pieces = stream(sub_texts, poolings=list(missing_by_pooling), ids=sub_ids, role=role)
        else:
            whole = inner.encode(sub_texts, poolings=list(missing_by_pooling), ids=sub_ids, role=role)
            pieces = iter([(np.arange(len(rows)), whole)])
        pending: list[tuple[np.ndarray, dict[str, np.ndarray]]] = []
        pending_rows = 0

        def flush() -> None:
            nonlocal pending, pending_rows
            if not pending:
                return
            sub = np.concatenate([r for r, _ in pending])
            for p, missing in missing_by_pooling.items():
                vectors = np.concatenate([v[p] for _, v in pending])
                keep = missing[rows[sub]]
                out[p][rows[sub[keep]]] = vectors[keep]
                self.cache.store(self.key(p, role), [hashes[i] for i in rows[sub[keep]]], vectors[keep])
            pending, pending_rows = [], 0

        try:
            for sub_rows, vectors in pieces:
                pending.append((np.asarray(sub_rows, dtype=np.int64), vectors))
                pending_rows += len(sub_rows)
                if pending_rows >= self.flush_rows:
                    flush()
        except BaseException as exc:
            saved = pending_rows
            flush()  # what was finished stays in the cache: a re-run resumes from it
            if isinstance(exc, ExecutorError):
                raise ExecutorError(f"{exc}; the finished vectors (the last {saved} of them just now) are in the "
                                    f"embedding cache {self.cache.root}: a re-run resumes from them") from exc
            raise
        flush()
        return out


def cache_summary(encoders: Sequence[Any]) -> dict[str, int] | None:
    """Summed cache counters over the encoders that have a cache (None when none does)."""
    seen: dict[int, CacheStats] = {}
    for enc in encoders:
        cache = getattr(enc, "cache", None)
        if isinstance(cache, EmbeddingCache):
            seen[id(cache)] = cache.stats
    if not seen:
        return None
    total = CacheStats()
    for s in seen.values():
        total.add(s)
    return total.to_dict()
