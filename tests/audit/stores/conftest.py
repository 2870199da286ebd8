"""The real database back-ends, filled once per session from the honest ingest (``tests/audit/conftest.py``).

- ``pg``: one PostgreSQL 16 + pgvector server (``tests/audit/pg.py``, from the ``pgserver`` wheel) on loopback
  with a password, started once per session and stopped at its end; its tables hold the ingest's chunks
  faithfully and with one fault each. Every test that uses it carries ``xdist_group("pgvector")`` so that
  under ``--dist loadgroup`` one worker starts one server.
- ``lance``: one LanceDB directory with the same tables.

Each table's rows are in corpus order (storage order = ingest order), ``id`` the chunk id, ``embedding`` (pg)
or ``vector`` (LanceDB) the stored vector, ``body`` the chunk text.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

from ..pg import PASSWORD, PgServer, start_server

DB = "audit"
SHIFT_BATCH = (64, 96)  # a batch of 32 whose vectors are shifted by one chunk id
UNNORMALIZED_SHARE = 0.1
COLLAPSE_LISTS = 40  # IVFFlat lists over the 160 ingested rows, searched with the default probes = 1


@dataclass(frozen=True)
class Tables:
    """The vectors each table holds, row by row (what the oracles compare against)."""

    ids: list[str]
    texts: list[str]
    faithful: np.ndarray
    shifted: np.ndarray
    unnormalized: np.ndarray
    unnormalized_rows: np.ndarray


def require(module: str, what: str) -> None:
    """Skip without ``module`` (with the command that installs it); under CI, which must run these tests, fail."""
    if find_spec(module) is None:
        reason = f"{what} needs {module}, which is not installed: pip install -e '.[test]'"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI must run the audit's database tests)")
        pytest.skip(reason)


def shift_by_one(vectors: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The ingest bug: inside rows [start, stop) each id got the next chunk's vector (the last one the first's)."""
    out = vectors.copy()
    out[start:stop] = np.roll(vectors[start:stop], -1, axis=0)
    return out


def unnormalize(vectors: np.ndarray, share: float, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """A "cosine" store that never normalized a share of its rows: those rows scaled by 0.3-3 (never 1)."""
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(vectors), size=round(share * len(vectors)), replace=False))
    out = vectors.copy()
    scale = rng.uniform(0.3, 3.0, size=len(rows)).astype(np.float32)
    scale = np.where(np.abs(scale - 1) < 0.2, 2.0, scale).astype(np.float32)
    out[rows] *= scale[:, None]
    return out, rows


@pytest.fixture(scope="session")
def tables(ingest) -> Tables:
    v = np.ascontiguousarray(ingest.vectors, dtype=np.float32)
    unnorm, rows = unnormalize(v, UNNORMALIZED_SHARE)
    return Tables(list(ingest.ids), list(ingest.texts), v, shift_by_one(v, *SHIFT_BATCH), unnorm, rows)


def _literal(v: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


def _fill(
    conn,
    table: str,
    ids: list,
    vectors: np.ndarray | list,
    texts: list[str] | None,
    *,
    column: str = "vector(384)",
    id_type: str = "text",
) -> None:
    conn.execute(f"CREATE TABLE {table} (id {id_type}, embedding {column}, body text)")
    with conn.cursor().copy(f"COPY {table} (id, embedding, body) FROM STDIN") as copy:
        for i, cid in enumerate(ids):
            vec = vectors[i]
            copy.write_row((cid, None if vec is None else _literal(np.asarray(vec)), texts[i] if texts else None))


@dataclass(frozen=True)
class PgFixture:
    server: PgServer
    tables: Tables

    def uri(self, table: str, **more: str) -> str:
        return self.server.uri(DB, table, **more)


@pytest.fixture(scope="session")
def pg(tables: Tables) -> Iterator[PgFixture]:
    """The session's PostgreSQL server with every table below (the password in ``tests/audit/pg.py``)."""
    require("pgserver", "the pgvector tests' PostgreSQL server")
    require("psycopg", "the pgvector store")
    server = start_server()
    try:
        with server.connect() as admin:
            admin.execute(f"CREATE DATABASE {DB}")
        with server.connect(DB) as c:
            c.execute("CREATE EXTENSION vector")
            ids, texts, v = tables.ids, tables.texts, tables.faithful
            _fill(c, "faithful_hnsw", ids, v, texts)
            c.execute(
                "CREATE INDEX ON faithful_hnsw USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
            )
            _fill(c, "faithful_ivf", ids, v, texts)
            c.execute("CREATE INDEX ON faithful_ivf USING ivfflat (embedding vector_ip_ops) WITH (lists = 4)")
            _fill(c, "collapse_ivf", ids, v, texts)
            c.execute(
                f"CREATE INDEX ON collapse_ivf USING ivfflat (embedding vector_cosine_ops) WITH (lists = {COLLAPSE_LISTS})"
            )
            _fill(c, "l2_hnsw", ids, v * 3.0, texts)  # an L2 store: unnormalized on purpose, as its contract may be
            c.execute("CREATE INDEX ON l2_hnsw USING hnsw (embedding vector_l2_ops)")
            _fill(c, "shifted", ids, tables.shifted, texts)
            c.execute("CREATE INDEX ON shifted USING hnsw (embedding vector_cosine_ops)")
            _fill(c, "unnormalized", ids, tables.unnormalized, texts)
            c.execute("CREATE INDEX ON unnormalized USING hnsw (embedding vector_ip_ops)")
            _fill(c, "noindex", ids, v, texts)
            _fill(c, "int_ids", list(range(1, len(ids) + 1)), v, texts, id_type="bigint")
            c.execute("CREATE INDEX ON int_ids USING hnsw (embedding vector_cosine_ops)")
            _fill(c, "dup_batch", ids + ids[32:64], np.vstack([v, v[32:64]]), texts + texts[32:64])
            c.execute("CREATE INDEX ON dup_batch USING hnsw (embedding vector_cosine_ops)")
            _fill(c, "dim16", ids[:40], v[:40, :16], texts[:40], column="vector(16)")
            c.execute("CREATE INDEX ON dim16 USING hnsw (embedding vector_cosine_ops)")
            _fill(c, "empty", [], [], None)
            c.execute("CREATE INDEX ON empty USING hnsw (embedding vector_cosine_ops)")
            _fill(c, "mixed", ids[:5], [*list(v[:4]), np.ones(3, np.float32)], None, column="vector")
            _fill(c, "nulls", [*ids[:3], None], [v[0], None, v[2], v[3]], None)
            c.execute("CREATE INDEX ON nulls USING hnsw (embedding vector_cosine_ops)")
            c.execute("CREATE TABLE wrong_type (id text, embedding real[], body text)")
            c.execute("INSERT INTO wrong_type VALUES ('d0001', '{1,2}', 'x')")
            c.execute("CREATE ROLE auditor LOGIN PASSWORD 'audit'")  # a password that is also the database's name
            c.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO auditor")
            c.execute("ANALYZE")
        yield PgFixture(server, tables)
    finally:
        server.stop()


@pytest.fixture
def pg_password(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    return PASSWORD


@dataclass(frozen=True)
class LanceFixture:
    path: Path
    tables: Tables

    def uri(self, table: str, **more: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in {"table": table, **more}.items())
        return f"lancedb:{self.path}?{query}"


def _lance_table(db, name: str, ids: list, vectors: np.ndarray, texts: list[str] | None, *, id_type=None):
    import pyarrow as pa

    dim = vectors.shape[1] if len(vectors) else 384
    columns = {
        "id": pa.array(ids, type=id_type or pa.string()),
        "vector": pa.FixedSizeListArray.from_arrays(
            pa.array(np.asarray(vectors, np.float32).ravel(), pa.float32()), dim
        ),
    }
    if texts is not None:
        columns["body"] = pa.array(texts, type=pa.string())
    return db.create_table(name, pa.table(columns))


@pytest.fixture(scope="session")
def lance(tables: Tables, tmp_path_factory: pytest.TempPathFactory) -> LanceFixture:
    """One LanceDB directory: faithful (IVF-Flat, all partitions probed in the URI), an IVF-PQ searched with one
    probe (recall collapses), an 8-bit IVF-PQ over too few rows to train (LanceDB indexes none of them), the shifted
    batch, the unnormalized share (a dot index), and the bad tables."""
    require("lancedb", "the LanceDB store")
    import lancedb
    import pyarrow as pa
    from lancedb.index import IvfFlat, IvfPq

    path = tmp_path_factory.mktemp("lancedb")
    db = lancedb.connect(str(path))
    ids, texts, v = tables.ids, tables.texts, tables.faithful
    _lance_table(db, "faithful", ids, v, texts).create_index(
        "vector", config=IvfFlat(distance_type="cosine", num_partitions=4)
    )
    # coarse codes (2 sub-vectors of 4 bits; 4 bits: 16 rows train it) searched without a refine step
    pq = IvfPq(distance_type="cosine", num_partitions=16, num_sub_vectors=2, num_bits=4)
    _lance_table(db, "pq", ids, v, texts).create_index("vector", config=pq)
    untrained = IvfPq(
        distance_type="cosine", num_partitions=16, num_sub_vectors=8
    )  # 8 bits need 256 rows: none indexed
    _lance_table(db, "pq_untrained", ids, v, texts).create_index("vector", config=untrained)
    _lance_table(db, "shifted", ids, tables.shifted, texts).create_index(
        "vector", config=IvfFlat(distance_type="cosine", num_partitions=4)
    )
    _lance_table(db, "unnormalized", ids, tables.unnormalized, texts).create_index(
        "vector", config=IvfFlat(distance_type="dot", num_partitions=4)
    )
    _lance_table(db, "l2", ids, v * 3.0, texts)  # no index: searched flat, metric=l2 in the URI
    _lance_table(db, "int_ids", list(range(1, len(ids) + 1)), v, texts, id_type=pa.int64())
    _lance_table(db, "dup_batch", ids + ids[32:64], np.vstack([v, v[32:64]]), texts + texts[32:64])
    _lance_table(db, "dim16", ids[:40], v[:40, :16], None)
    _lance_table(db, "empty", [], np.zeros((0, 384), np.float32), None)
    db.create_table("wrong_type", pa.table({"id": ["d0001"], "vector": ["not a vector"]}))
    return LanceFixture(path, tables)
