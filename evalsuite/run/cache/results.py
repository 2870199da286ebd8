"""The result cache: what a run computed from its vectors, reused when nothing that determines it changed.

A release pipeline re-runs the gate with every vector in the embedding cache; what is left is FAISS search,
ranx scoring and the statistics over per-query scores, all deterministic functions of their inputs. This
module stores them under a key made of *every* input, so that a re-run with the same inputs reads them
back (importing neither faiss nor ranx, numba, scipy or matplotlib) and any change recomputes:

* ``score`` (:class:`~evalsuite.run.cache.scoring.ScoringCache`): one contract's ranking, aggregate metrics and per-query scores, keyed by
  the exact bytes of the finalized query and document vectors that would be searched (so the model
  identity, every rendered input text, pooling, dtype, max length, dimension and normalization are all in
  it: any of them changes a vector), the query and document ids in order, the qrels, the search depth, the
  similarity and index, the metric list, and the versions of evalsuite, numpy, faiss, ranx and numba with a
  digest of the source of the modules that compute it (an edit without a version bump misses too);
* derived entries (:meth:`ResultStore.memo`): statistics over per-query scores and rendered plots, keyed by
  the content of their inputs, their parameters, the library versions and their source.

Only exact in-memory flat search is cached: an approximate index measures latency, which a cache cannot
reuse, and a block-wise run never holds its corpus in memory. ``--no-cache`` bypasses this cache with the
embedding cache. Each cached result says so (``timing.result_cache``: ``hit`` with when it was computed
and what search and scoring cost then, ``miss``, or ``off``).

Entries live under ``<cache dir>/results/v1/<kind>/<key[:2]>/<key>.bin``: a header (format, kind, key, the
canonical JSON of the key's fields, the payload as JSON, the layout of any arrays), the arrays' bytes,
and a SHA-256 of all of it. An entry that fails verification, or whose stored fields differ from the
ones asked for, is reported in the run's warnings, deleted and recomputed; entries are written
atomically (:mod:`evalsuite.base.io`), so concurrent runs never see half of one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ...base.errors import ContractError
from ...base.io import atomic_write_bytes

if TYPE_CHECKING:
    from ..spec import RunSpec

FORMAT = 1
SUBDIR = "results"
MAGIC = b"EVALSUITE-RESULT\n"
_LEN = 8  # bytes of the header length
_SUM = 32  # bytes of the trailing SHA-256
T = TypeVar("T")

# What a score entry depends on besides its inputs: the libraries and the source that compute it.
SCORE_LIBRARIES = ("evalsuite", "numpy", "faiss-cpu", "faiss-gpu", "faiss", "ranx", "numba")
SCORE_MODULES = (
    "evalsuite.retrieval.search",
    "evalsuite.scoring.metrics",
    "evalsuite.run.cache.results",
    "evalsuite.run.cache.scoring",
)

# What a score entry of a retriever other than dense depends on besides those (keys of dense runs lack them).
RETRIEVAL_LIBRARIES = ("bm25s", "PyStemmer")
RETRIEVAL_MODULES = (
    "evalsuite.retrieval.retrievers.kinds",
    "evalsuite.retrieval.retrievers.spec",
    "evalsuite.retrieval.retrievers.params",
    "evalsuite.retrieval.retrievers.value",
    "evalsuite.retrieval.retrievers.bm25",
    "evalsuite.retrieval.retrievers.fusion",
    "evalsuite.retrieval.sparse_search",
    "evalsuite.encode.sparse",
    "evalsuite.model.sparse_layout",
    "evalsuite.run.retrieve",
)


@cache
def library_version(dist: str) -> str | None:
    """The installed version of ``dist`` (None when it is not installed), read without importing it."""
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def library_versions(dists: Iterable[str]) -> dict[str, str | None]:
    return {d: library_version(d) for d in dists}


@cache
def code_digest(modules: tuple[str, ...]) -> str:
    """SHA-256 of the source of ``modules`` (evalsuite modules, by name): part of every key, so that editing the
    code that computes an entry invalidates it even when the version number stays."""
    from importlib.util import find_spec

    h = hashlib.sha256()
    for name in modules:
        spec = find_spec(name)
        origin = spec.origin if spec is not None else None
        h.update(name.encode() + b"\0")
        h.update(Path(origin).read_bytes() if origin else b"<no source>")
    return h.hexdigest()


def array_digest(a: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and bytes (C order)."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.data)
    return h.hexdigest()


def strings_digest(items: Iterable[str]) -> str:
    """SHA-256 of a sequence of strings, in order (as a JSON list: ``["ab"]`` and ``["a", "b"]`` differ)."""
    return hashlib.sha256(json.dumps(list(items), ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


def json_digest(obj: object) -> str:
    """SHA-256 of ``obj``'s canonical JSON."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()


def canonical_json(obj: object) -> str:
    """Compact JSON that keeps what a consumer of ``obj`` sees: mapping order (keys as JSON writes them), every
    float exactly (``repr``), an array as its digest."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=True, default=_plain)


def _plain(obj: object) -> object:
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, np.ndarray):
        return {"array": array_digest(obj)}
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"result cache key: {type(obj).__name__} is not a plain value")


class EntryError(ValueError):
    """A cache entry that fails verification or does not decode."""


@dataclass(frozen=True)
class Entry:
    payload: Any
    arrays: Mapping[str, np.ndarray]
    created: str


@dataclass
class ResultStore:
    """One cache directory of result entries; counts what it served and keeps what went wrong."""

    root: Path
    hits: dict[str, int] = field(default_factory=dict)  # per kind
    misses: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @staticmethod
    def key(kind: str, fields: Mapping[str, object]) -> tuple[str, str]:
        """(key, canonical fields): the key is the SHA-256 of the kind and the fields' canonical JSON."""
        text = canonical_json(dict(sorted(fields.items())))
        return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest(), text

    def path(self, kind: str, key: str) -> Path:
        return self.root / f"v{FORMAT}" / kind / key[:2] / f"{key}.bin"

    def load(self, kind: str, fields: Mapping[str, object], undump: Callable[[Entry], T]) -> T | None:
        """The entry for these fields decoded by ``undump``, or None (a miss); an entry that fails verification
        or does not decode is reported and deleted."""
        key, text = self.key(kind, fields)
        path = self.path(kind, key)
        value: T | None = None
        try:
            value = undump(decode_entry(path.read_bytes(), kind=kind, key=key, fields=text))
        except FileNotFoundError:
            pass
        except OSError as exc:
            self.problems.append(f"result cache entry {path} could not be read ({exc}); recomputed")
        except (EntryError, KeyError, TypeError, ValueError, IndexError, ContractError) as exc:
            self.discard(kind, key, str(exc) if isinstance(exc, EntryError) else f"payload does not decode: {exc!r}")
        counts = self.misses if value is None else self.hits
        counts[kind] = counts.get(kind, 0) + 1
        return value

    def discard(self, kind: str, key: str, why: str) -> None:
        """Report and delete an entry that cannot be used (it is recomputed and stored again)."""
        path = self.path(kind, key)
        self.problems.append(f"result cache entry {path} is unusable ({why}); deleted and recomputed")
        with contextlib.suppress(OSError):
            path.unlink()

    def save(
        self, kind: str, fields: Mapping[str, object], payload: object, arrays: Mapping[str, np.ndarray] | None = None
    ) -> None:
        """Store an entry atomically; a cache that cannot be written is reported, never fatal."""
        key, text = self.key(kind, fields)
        try:
            atomic_write_bytes(self.path(kind, key), encode_entry(kind, key, text, payload, arrays or {}))
        except OSError as exc:
            self.problems.append(f"result cache entry for {kind} could not be written under {self.root} ({exc})")

    def memo(
        self,
        kind: str,
        fields: Mapping[str, object],
        compute: Callable[[], T],
        dump: Callable[[T], tuple[object, Mapping[str, np.ndarray]]],
        undump: Callable[[Entry], T],
    ) -> T:
        """``compute()``, or what it returned before for the same ``fields`` (``dump`` turns it into a JSON payload
        and arrays, ``undump`` an entry back into it)."""
        value = self.load(kind, fields, undump)
        if value is None:
            value = compute()
            payload, arrays = dump(value)
            self.save(kind, fields, payload, arrays)
        return value

    def summary(self) -> dict[str, dict[str, int]]:
        """Per kind, entries reused and computed in this process."""
        kinds = sorted(set(self.hits) | set(self.misses))
        return {k: {"hits": self.hits.get(k, 0), "misses": self.misses.get(k, 0)} for k in kinds}


def store_for(spec: RunSpec) -> ResultStore | None:
    """The result store of the spec's cache directory; None with ``--no-cache``."""
    if not spec.use_cache:
        return None
    from ...encode.cache import cache_root

    return ResultStore(cache_root(spec.cache_dir) / SUBDIR)


# -- the file format ------------------------------------------------------------------------------
def encode_entry(kind: str, key: str, fields: str, payload: object, arrays: Mapping[str, np.ndarray]) -> bytes:
    layout, blobs, offset = [], [], 0
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        if a.dtype.hasobject:
            raise TypeError(f"result cache: array {name!r} holds Python objects")
        layout.append({"name": name, "dtype": a.dtype.str, "shape": list(a.shape), "offset": offset})
        blobs.append(a.tobytes())
        offset += a.nbytes
    header = json.dumps(
        {
            "format": FORMAT,
            "kind": kind,
            "key": key,
            "fields": fields,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "payload": payload,
            "arrays": layout,
        },
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=True,
    ).encode()
    body = MAGIC + len(header).to_bytes(_LEN, "little") + header + b"".join(blobs)
    return body + hashlib.sha256(body).digest()


def decode_entry(data: bytes, *, kind: str, key: str, fields: str) -> Entry:
    """Verify and decode an entry; :class:`EntryError` says why one cannot be used."""
    if len(data) < len(MAGIC) + _LEN + _SUM or not data.startswith(MAGIC):
        raise EntryError("not a result cache entry, or truncated")
    body = data[:-_SUM]
    if hashlib.sha256(body).digest() != data[-_SUM:]:
        raise EntryError("checksum mismatch")
    start = len(MAGIC) + _LEN
    size = int.from_bytes(body[len(MAGIC) : start], "little")
    try:
        header = json.loads(body[start : start + size])
    except ValueError as exc:
        raise EntryError(f"header does not parse: {exc}") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise EntryError(f"format {header.get('format') if isinstance(header, dict) else None!r}, not {FORMAT}")
    if header.get("kind") != kind or header.get("key") != key or header.get("fields") != fields:
        raise EntryError("its key fields differ from the ones asked for")
    blob = memoryview(body)[start + size :]
    arrays = {}
    try:
        for spec in header["arrays"]:
            dtype = np.dtype(spec["dtype"])
            count = int(np.prod(spec["shape"], dtype=np.int64))
            if spec["offset"] + count * dtype.itemsize > len(blob):
                raise EntryError(f"array {spec['name']!r} runs past the end")
            a = np.frombuffer(blob, dtype=dtype, count=count, offset=spec["offset"])
            arrays[spec["name"]] = a.reshape(spec["shape"])
    except (KeyError, TypeError) as exc:
        raise EntryError(f"array layout does not decode: {exc!r}") from exc
    return Entry(header.get("payload"), arrays, str(header.get("created", "")))
