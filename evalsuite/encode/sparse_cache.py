"""On-disk cache of learned sparse vectors (:mod:`evalsuite.encode.sparse`): a rerun of a sparse or hybrid run
reads the vectors of a role's texts back instead of running the model again.

One file per (model revision, tokenizer revision, sparse head, max length, pruning, the role's rendered texts in
order) under ``<root>/sparse/v1/<digest[:2]>/<digest>.npz``: the vectors concatenated (``ids`` int64, ``weights``
float32, ``offsets`` int64: text i's posting is ``offsets[i]:offsets[i+1]``), the key that named it and a sha256 of
the arrays. A file whose key or checksum does not verify is reported (a
:class:`~evalsuite.encode.cache.CacheCorruptionWarning`), deleted and recomputed; files are written atomically.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import json
import warnings
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..base.io import atomic_write_bytes
from .cache import CacheCorruptionWarning

# one sparse vector: (int64 token ids ascending, float32 weights > 0), as evalsuite.encode.sparse makes them; defined
# here, the lower of the two modules (encode/sparse.py imports this one and names it from here)
SparseVector = tuple[np.ndarray, np.ndarray]

LAYOUT = "v1"


@dataclass(frozen=True)
class SparseKey:
    """What names a cached list of sparse vectors (``texts``: a sha256 over the rendered texts, in order)."""

    model_revision: str
    tokenizer_revision: str
    head: str  # the sparse head as the layout declares it (family, pooling, activation)
    max_length: int
    top_k: int  # the cut applied (0: every weight)
    texts: str

    @staticmethod
    def texts_digest(texts: Sequence[str]) -> str:
        h = hashlib.sha256()
        for t in texts:
            data = t.encode("utf-8")
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
        return h.hexdigest()

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:32]


def _checksum(ids: np.ndarray, weights: np.ndarray, offsets: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in (ids, weights, offsets):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


class SparseVectorCache:
    """``get(key, make)``: the vectors under ``key``, read back, or ``make()``'s, stored (``hits``/``misses``)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root) / "sparse" / LAYOUT
        self.hits = 0
        self.misses = 0
        self.corrupt = 0

    def path(self, key: SparseKey) -> Path:
        d = key.digest()
        return self.root / d[:2] / f"{d}.npz"

    def load(self, key: SparseKey) -> list[SparseVector] | None:
        path = self.path(key)
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                ids, weights, offsets = data["ids"], data["weights"], data["offsets"]
                stored_key, stored_sum = str(data["key"]), str(data["sha256"])
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            self._corrupt(path, f"unreadable ({type(exc).__name__}: {exc})")
            return None
        if stored_key != json.dumps(asdict(key), sort_keys=True):
            self._corrupt(path, "it holds another key")
            return None
        if stored_sum != _checksum(ids, weights, offsets) or len(offsets) == 0 or offsets[-1] != len(ids):
            self._corrupt(path, "its checksum does not verify")
            return None
        return [(ids[a:b].astype(np.int64), weights[a:b].astype(np.float32)) for a, b in itertools.pairwise(offsets)]

    def _corrupt(self, path: Path, why: str) -> None:
        self.corrupt += 1
        warnings.warn(
            f"sparse vector cache {path}: {why}; deleted, the vectors are computed again",
            CacheCorruptionWarning,
            stacklevel=3,
        )
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    def store(self, key: SparseKey, vectors: Sequence[SparseVector]) -> Path:
        lengths = np.array([len(i) for i, _ in vectors], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        ids = np.concatenate([i for i, _ in vectors]).astype(np.int64) if vectors else np.zeros(0, np.int64)
        weights = np.concatenate([w for _, w in vectors]).astype(np.float32) if vectors else np.zeros(0, np.float32)
        buf = io.BytesIO()
        np.savez(
            buf,
            ids=ids,
            weights=weights,
            offsets=offsets,
            key=np.array(json.dumps(asdict(key), sort_keys=True)),
            sha256=np.array(_checksum(ids, weights, offsets)),
        )
        return atomic_write_bytes(self.path(key), buf.getvalue())

    def get(self, key: SparseKey, make: Callable[[], list[SparseVector]]) -> list[SparseVector]:
        found = self.load(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        vectors = make()
        self.store(key, vectors)
        return vectors
