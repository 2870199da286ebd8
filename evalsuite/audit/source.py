"""The one protocol every audited store implements: its vectors streamed, fetched by id and searched.

A store (a FAISS file, a pgvector table, a LanceDB table) is opened from a URI by its
:class:`StoreKind` declaration in ``stores/`` and answers through :class:`IndexSource`. Chunk ids are
strings whatever the store keeps; scores are higher-is-better (distances negated).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

Metric = Literal["ip", "l2", "cosine"]
METRICS: tuple[Metric, ...] = ("ip", "l2", "cosine")


@dataclass(frozen=True)
class IndexInfo:
    """What an open store says about itself, as deployed."""

    store: str  # "faiss" | "pgvector" | "lancedb" | ...
    location: str  # what to print: a path, or host:port/db table — never a password
    count: int  # stored vectors (rows), duplicates included
    dim: int
    metric: Metric  # the metric the store searches with as deployed
    index_type: str  # "IndexIVFFlat", "IndexHNSWFlat", "hnsw", "ivfflat", "IVF_PQ", "flat", ...
    search_params: Mapping[str, int | float | str] = field(default_factory=dict)  # nprobe, efSearch, ...


class IndexSource(Protocol):
    """An open store: every stored row streamed, vectors fetched by chunk id, and searched two ways."""

    def info(self) -> IndexInfo: ...

    def iter_vectors(self, batch_size: int) -> Iterator[tuple[list[str], np.ndarray]]:
        """Every stored row in storage order: its chunk id (str) and its float32 vector, (n, dim) per batch;
        bounded memory (a FAISS block, a server-side cursor, Lance batches)."""
        ...

    def fetch(self, ids: Sequence[str]) -> dict[str, list[np.ndarray]]:
        """Every stored vector of each asked id (a duplicated id gives several); an id not stored is absent."""
        ...

    def search(self, queries: np.ndarray, k: int, *, exact: bool) -> list[list[tuple[str, float]]]:
        """Top ``k`` (chunk id, score) per query, best first. ``exact=False``: the store's own search as
        deployed (its ANN index and parameters); ``exact=True``: brute force over the same stored vectors with
        the same metric. Scores: higher is better (distances negated)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class RowIds(Protocol):
    """A store that names its rows' chunk ids without streaming their vectors (a FAISS file's sidecar), so the
    audit encodes the sampled rows' texts while the vectors stream."""

    def ids_at(self, rows: np.ndarray) -> list[str]:
        """The chunk id of each of ``rows`` (storage order positions), in that order."""
        ...


@runtime_checkable
class TextSource(Protocol):
    """A store that also keeps each chunk's text (a ``text`` column), so no dataset corpus is needed."""

    def texts(self, ids: Sequence[str]) -> dict[str, str]: ...


@dataclass(frozen=True)
class SourceOptions:
    """How to open a store, beside its URI."""

    ids_path: Path | None = None  # --ids sidecar (faiss)
    password_env: str | None = None  # --password-env VAR (pgvector); None: the store's default (PGPASSWORD)
    mmap: bool = True


@dataclass(frozen=True)
class StoreKind:
    """One store back-end: the URI schemes it answers, the extra that installs its client, how it opens."""

    name: str  # "faiss"
    schemes: tuple[str, ...]  # URI prefixes: ("faiss:",), ("postgresql://", "postgres://"), ("lancedb:",)
    extra: str | None  # the pip extra of its client ("pgvector", "lancedb"); None for faiss
    module: str  # the client module checked with evalsuite.base.extras.require ("psycopg", "lancedb", "faiss")
    open: Callable[[str, SourceOptions], IndexSource]  # URI (+ options) -> an open source; IndexSourceError
    help: str
