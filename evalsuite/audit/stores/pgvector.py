"""PostgreSQL + pgvector tables: ``postgresql://USER@HOST:PORT/DB?table=T&id=COL&vector=COL[&text=COL]``, plus
any libpq connection parameter (``sslmode=require``, ``host=/var/run/postgresql``, ``service=NAME``, ...: the
URI is libpq's own, split from evalsuite's keys in ``libpq.py``).

The password is read only from an environment variable (``--password-env VAR``, default ``PGPASSWORD``) or
libpq's password file, and never shows: a URI that carries one is refused without echoing it, and every message, the location and the
``repr`` have it masked in any form a server may echo (``encode/secret.py``'s redaction).

- **Ids**: the id column's values cast to text (``id::text``: an integer id 12 is the chunk id ``"12"``); the
  column must be text-like (``text``, ``varchar``, ``char``, ``uuid``) or an integer. A NULL id is streamed as
  ``""``, which no corpus holds, so the structure check names it as an unknown id.
- **Vectors**: the ``vector`` column (pgvector's type, its dimension from the column's type or else its first
  row) streamed through a server-side (named) cursor in one read-only, repeatable-read transaction, decoded
  from pgvector's binary format with numpy (no ``pgvector`` package); a NULL vector is streamed as NaNs, which
  the structure check names as non-finite.
- **Metric**: ``metric=cosine|ip|l2`` in the URI (the operator the application queries with), else the operator
  class of the table's HNSW or IVFFlat index on the column (``vector_cosine_ops``, ``vector_ip_ops``,
  ``vector_l2_ops``). Scores are higher-is-better: cosine similarity, inner product, negated squared L2 (as
  FAISS).
- **Search as deployed**: ``ORDER BY vector <op> q LIMIT k`` with the server's own settings
  (``hnsw.ef_search``, ``ivfflat.probes``, whatever ``ALTER DATABASE/ROLE ... SET`` gave the session; the URI's
  ``ef_search=`` / ``probes=`` set them as an application does) and reported with the plan the planner chose.
  **Exact search**: the same query with index, index-only and bitmap scans off (``SET LOCAL``) in its own
  transaction; its plan is checked to use no index.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...base.errors import IndexSourceError
from ...encode.secret import Secret, cut
from ..source import IndexInfo, IndexSource, Metric, SourceOptions, StoreKind
from .libpq import (
    DEFAULT_PASSWORD_ENV,
    EXACT_SETTINGS,
    OPERATOR,
    PgTarget,
    connect,
    parse_uri,
    plan_scans,
    raw_vectors,
)

if TYPE_CHECKING:
    pass

FETCH_CHUNK = 10_000  # ids per fetch / texts query
FETCH_ROWS = 4096  # rows fetched from the cursor at once: a batch is decoded in steps this size
OPCLASS_METRIC: Mapping[str, Metric] = {
    "vector_cosine_ops": "cosine",
    "vector_ip_ops": "ip",
    "vector_l2_ops": "l2",
}
TEXT_TYPES = {"text", "character varying", "character", "uuid", "name"}
INT_TYPES = {"smallint", "integer", "bigint"}


class PgvectorSource(IndexSource):
    """An open pgvector table; see the module docstring."""

    def __init__(self, target: PgTarget, options: SourceOptions) -> None:

        env = options.password_env or DEFAULT_PASSWORD_ENV
        value = os.environ.get(env)
        secret = Secret(value, source=env) if value else None  # registered: redact() masks it everywhere
        self._where = f"--index postgresql://{self._mask(target.location)}"
        self.conn, self.target = connect(target, secret.reveal() if secret else None, env)
        self._where = f"--index postgresql://{self._mask(self.target.location)}"
        del secret
        try:
            self._inspect()
        except BaseException:
            self.conn.close()
            raise

    @staticmethod
    def _mask(text: str) -> str:
        from ...encode.secret import redact

        return redact(text)

    def __repr__(self) -> str:
        return f"PgvectorSource({self._where.removeprefix('--index ')})"

    def _fail(self, message: str) -> IndexSourceError:
        return IndexSourceError(self._mask(f"{self._where}: {message}"))

    def _sql_error(self, what: str, exc: Exception) -> IndexSourceError:
        return self._fail(f"{what} failed ({cut(str(exc))})")

    # -- the table, as deployed --------------------------------------------------------------------
    def _inspect(self) -> None:
        import psycopg
        from psycopg import sql

        t = self.target
        self.table_sql = sql.Identifier(t.schema, t.table) if t.schema else sql.Identifier(t.table)
        try:
            ext = self.conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            if ext is None:
                raise self._fail(
                    f"the database {t.dbname!r} has no pgvector extension (CREATE EXTENSION vector): "
                    "point the URI at the database the ingest job wrote"
                )
            self.ext_version = str(ext[0])
            row = self.conn.execute("SELECT to_regclass(%s)::oid", [self.table_sql.as_string(self.conn)]).fetchone()
            if row is None or row[0] is None:
                raise self._fail(
                    f"table {t.table_name!r} does not exist in database {t.dbname!r} (or this user cannot see it): "
                    "check table= (schema.table for a table outside the search path)"
                )
            self.table_oid = int(row[0])
            cols = {
                str(name): (int(num), str(typ), int(typmod))
                for name, num, typ, typmod in self.conn.execute(
                    "SELECT attname, attnum, format_type(atttypid, NULL), atttypmod FROM pg_attribute "
                    "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
                    [self.table_oid],
                ).fetchall()
            }
            for param, col in (("id", t.id_col), ("vector", t.vector_col), ("text", t.text_col)):
                if col is not None and col not in cols:
                    raise self._fail(
                        f"column {t.column(col)!r} (given as {param}=) does not exist; the table's columns are "
                        f"{', '.join(sorted(cols))}"
                    )
            id_type = cols[t.id_col][1]
            if id_type not in TEXT_TYPES | INT_TYPES:
                raise self._fail(
                    f"id column {t.column(t.id_col)!r} is of type {id_type}; chunk ids are read as text from a "
                    "text, varchar, uuid or integer column: give id= the column holding the chunk ids"
                )
            self.int_ids = id_type in INT_TYPES
            vec_num, vec_type, vec_mod = cols[t.vector_col]
            if vec_type != "vector":
                raise self._fail(
                    f"vector column {t.column(t.vector_col)!r} is of type {vec_type}, not pgvector's vector: give "
                    "vector= the column holding the embeddings"
                )
            self.id_sql = sql.Identifier(t.id_col)
            self.vec_sql = sql.Identifier(t.vector_col)
            self.text_sql = sql.Identifier(t.text_col) if t.text_col else None
            self.count = int(
                self.conn.execute(sql.SQL("SELECT count(*) FROM {}").format(self.table_sql)).fetchone()[0]  # type: ignore[index]
            )
            if self.count == 0:
                raise self._fail(
                    f"table {t.table_name!r} has no rows: nothing to audit; point table= at the table the ingest "
                    "job wrote (or run it first)"
                )
            if vec_mod > 0:
                self.dim = vec_mod
            else:
                first = self.conn.execute(
                    sql.SQL("SELECT vector_dims({v}) FROM {t} WHERE {v} IS NOT NULL LIMIT 1").format(
                        v=self.vec_sql, t=self.table_sql
                    )
                ).fetchone()
                if first is None:
                    raise self._fail(f"every row's {t.column(t.vector_col)!r} is NULL: the ingest job stored no vector")
                self.dim = int(first[0])
            if not raw_vectors(self.conn):  # pragma: no cover - the extension was found above
                raise self._fail("pgvector's type 'vector' is not visible to this user")
            self.conn.execute("SELECT '[1]'::vector")  # loads pgvector's library, which defines its settings
            for guc, value in t.settings.items():
                self.conn.execute(sql.SQL("SET {} = {}").format(sql.Identifier(*guc.split(".")), sql.Literal(value)))
            self._index(vec_num)
        except psycopg.Error as exc:
            raise self._sql_error(f"reading table {t.table_name!r}", exc) from None

    def _index(self, vec_num: int) -> None:
        t = self.target
        rows = self.conn.execute(
            "SELECT c.relname, am.amname, opc.opcname, coalesce(c.reloptions, '{}') FROM pg_index x "
            "JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am am ON am.oid = c.relam "
            "JOIN pg_opclass opc ON opc.oid = x.indclass[0] "
            "WHERE x.indrelid = %s AND x.indkey[0] = %s AND am.amname IN ('hnsw', 'ivfflat') ORDER BY c.relname",
            [self.table_oid, vec_num],
        ).fetchall()
        indexes = [(str(n), str(am), OPCLASS_METRIC.get(str(opc)), str(opc), list(opts)) for n, am, opc, opts in rows]
        metric = t.metric
        if metric is None:
            metrics = {m for _, _, m, _, _ in indexes if m is not None}
            if len(metrics) != 1:
                found = (
                    "no HNSW or IVFFlat index"
                    if not indexes
                    else "indexes for several metrics (" + ", ".join(f"{n}: {o}" for n, _, _, o, _ in indexes) + ")"
                )
                raise self._fail(
                    f"column {t.column(t.vector_col)!r} has {found}: give metric=cosine, metric=ip or metric=l2 "
                    "in the URI (the operator the application queries with)"
                )
            metric = metrics.pop()
        self.metric: Metric = metric
        params: dict[str, int | float | str] = {"pgvector": self.ext_version}
        used = [ix for ix in indexes if ix[2] == metric]
        if not used:
            self.index_type = "flat"
            if indexes:
                params["unused_indexes"] = ", ".join(f"{n} ({o})" for n, _, _, o, _ in indexes)
        else:
            name, am, _, opc, opts = used[0]
            self.index_type = am
            params.update(index=name, opclass=opc)
            for opt in opts:
                key, _, value = str(opt).partition("=")
                params[key] = int(value) if value.isdigit() else value
            guc = "hnsw.ef_search" if am == "hnsw" else "ivfflat.probes"
            setting = self.conn.execute("SELECT current_setting(%s, true)", [guc]).fetchone()
            if setting is not None and setting[0] is not None:
                params[guc.partition(".")[2]] = int(setting[0]) if str(setting[0]).isdigit() else str(setting[0])
        probe = self._first_vector()
        params["plan"] = self._plan(probe, exact=False)
        exact_plan = self._plan(probe, exact=True)
        if "Index" in exact_plan:
            raise self._fail(f"the exact search still uses an index ({exact_plan}) with index scans off")
        self.params = params

    # -- reading -------------------------------------------------------------------------------------
    def _decode(self, raw: Sequence[bytes | None], ids: Sequence[str]) -> np.ndarray:
        """(n, dim) float32 from pgvector's binary format (uint16 dim, uint16 unused, float32 big-endian)."""
        width = 4 + 4 * self.dim
        out = np.full((len(raw), self.dim), np.nan, dtype=np.float32)
        for i, (data, cid) in enumerate(zip(raw, ids, strict=True)):
            if data is None:
                continue
            if len(data) != width:
                got = struct.unpack_from(">H", data)[0] if len(data) >= 2 else 0
                raise self._fail(
                    f"row with id {cid!r} holds a {got}-dimensional vector in {self.target.column(self.target.vector_col)!r} "
                    f"where the others hold {self.dim}: the column mixes dimensions; re-embed that row (or declare "
                    f"the column vector({self.dim}))"
                )
            out[i] = np.frombuffer(data, dtype=">f4", count=self.dim, offset=4)
        return out

    def _first_vector(self) -> np.ndarray:
        from psycopg import sql

        with self.conn.cursor(binary=True) as cur:
            cur.execute(
                sql.SQL("SELECT {v} FROM {t} WHERE {v} IS NOT NULL LIMIT 1").format(v=self.vec_sql, t=self.table_sql)
            )
            row = cur.fetchone()
        first: np.ndarray = self._decode([row[0] if row else None], ["(first row)"])[0]
        return first

    def info(self) -> IndexInfo:
        return IndexInfo(
            store="pgvector",
            location=self._mask(self.target.location + f" id={self.target.id_col} vector={self.target.vector_col}"),
            count=self.count,
            dim=self.dim,
            metric=self.metric,
            index_type=self.index_type,
            search_params=dict(self.params),
        )

    def iter_vectors(self, batch_size: int) -> Iterator[tuple[list[str], np.ndarray]]:
        import psycopg
        from psycopg import sql

        query = sql.SQL("SELECT {i}::text, {v} FROM {t}").format(i=self.id_sql, v=self.vec_sql, t=self.table_sql)
        try:
            with self.conn.transaction():
                self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                with self.conn.cursor(name="evalsuite_audit_vectors", binary=True) as cur:
                    cur.execute(query)
                    step = min(batch_size, FETCH_ROWS)  # rows held as Python objects at once
                    while True:
                        ids: list[str] = []
                        out = np.empty((min(batch_size, self.count), self.dim), dtype=np.float32)
                        while len(ids) < len(out) and (rows := cur.fetchmany(min(step, len(out) - len(ids)))):
                            got = ["" if r[0] is None else str(r[0]) for r in rows]
                            out[len(ids) : len(ids) + len(got)] = self._decode([r[1] for r in rows], got)
                            ids += got
                        if not ids:
                            break
                        yield ids, out[: len(ids)]
                        if len(ids) < len(out):
                            break
        except psycopg.Error as exc:
            raise self._sql_error("streaming the vectors", exc) from None

    def _id_param(self, ids: Sequence[str]) -> tuple[Any, list[Any]]:
        """The WHERE clause and its parameter for ``ids`` (the id column's own type, so its index is usable)."""
        from psycopg import sql

        if self.int_ids:
            ints = [int(i) for i in ids if i.lstrip("-").isdigit() and len(i) < 20]
            return sql.SQL("{} = ANY(%s::bigint[])").format(self.id_sql), [ints]
        return sql.SQL("{}::text = ANY(%s::text[])").format(self.id_sql), [list(ids)]

    def fetch(self, ids: Sequence[str]) -> dict[str, list[np.ndarray]]:
        import psycopg
        from psycopg import sql

        out: dict[str, list[np.ndarray]] = {}
        unique = list(dict.fromkeys(ids))
        try:
            for start in range(0, len(unique), FETCH_CHUNK):
                where, args = self._id_param(unique[start : start + FETCH_CHUNK])
                with self.conn.cursor(binary=True) as cur:
                    cur.execute(
                        sql.SQL("SELECT {i}::text, {v} FROM {t} WHERE {w}").format(
                            i=self.id_sql, v=self.vec_sql, t=self.table_sql, w=where
                        ),
                        args,
                    )
                    rows = cur.fetchall()
                got = [str(r[0]) for r in rows]
                for cid, vec in zip(got, self._decode([r[1] for r in rows], got), strict=True):
                    out.setdefault(cid, []).append(vec)
        except psycopg.Error as exc:
            raise self._sql_error("fetching vectors by id", exc) from None
        return out

    def _texts(self, ids: Sequence[str]) -> dict[str, str]:
        """Each asked id's text from the ``text=`` column (the first row of a duplicated id)."""
        import psycopg
        from psycopg import sql

        if self.text_sql is None:
            raise self._fail("no text column: add text=COL to the URI, or give --dataset with the chunk texts")
        out: dict[str, str] = {}
        unique = list(dict.fromkeys(ids))
        try:
            for start in range(0, len(unique), FETCH_CHUNK):
                where, args = self._id_param(unique[start : start + FETCH_CHUNK])
                rows = self.conn.execute(
                    sql.SQL("SELECT {i}::text, {x}::text FROM {t} WHERE {w}").format(
                        i=self.id_sql, x=self.text_sql, t=self.table_sql, w=where
                    ),
                    args,
                ).fetchall()
                for cid, text in rows:
                    if text is not None:
                        out.setdefault(str(cid), str(text))
        except psycopg.Error as exc:
            raise self._sql_error("reading the text column", exc) from None
        return out

    # -- searching -------------------------------------------------------------------------------------
    def _query_sql(self, *, exact: bool) -> Any:
        """The top-k query; the exact one differs in its text too, so no server or driver cache shares a plan."""
        from psycopg import sql

        op = sql.SQL(OPERATOR[self.metric])
        return sql.SQL(
            "SELECT {i}::text, {v} {op} %s::vector FROM {t} ORDER BY {v} {op} %s::vector LIMIT %s{tag}"
        ).format(
            i=self.id_sql,
            v=self.vec_sql,
            op=op,
            t=self.table_sql,
            tag=sql.SQL(" /* evalsuite audit: exact */" if exact else ""),
        )

    @staticmethod
    def _literal(q: np.ndarray) -> str:
        return "[" + ",".join(repr(float(x)) for x in np.asarray(q, dtype=np.float32)) + "]"

    def _score(self, distance: float) -> float:
        if self.metric == "cosine":
            return 1.0 - distance
        if self.metric == "ip":
            return -distance  # <#> is the negative inner product
        return -(distance * distance)  # <-> is the Euclidean distance; FAISS's L2 score is the squared one

    def _exact_settings(self) -> None:
        for guc, value in EXACT_SETTINGS:
            self.conn.execute(f"SET LOCAL {guc} = {value}")

    def _plan(self, q: np.ndarray, *, exact: bool) -> str:
        """The scan the planner chooses for one query ("Index Scan using t_idx", "Seq Scan")."""
        from psycopg import sql

        with self.conn.transaction(force_rollback=True):
            if exact:
                self._exact_settings()
            lit = self._literal(np.nan_to_num(q, nan=1.0))
            row = self.conn.execute(
                sql.SQL("EXPLAIN (FORMAT JSON) {}").format(self._query_sql(exact=exact)), [lit, lit, 10]
            ).fetchone()
        return plan_scans(row[0] if row else [])

    def search(self, queries: np.ndarray, k: int, *, exact: bool) -> list[list[tuple[str, float]]]:
        import psycopg

        q_all = np.asarray(queries, dtype=np.float32)
        if q_all.ndim != 2 or q_all.shape[1] != self.dim:
            raise self._fail(
                f"vector column {self.target.column(self.target.vector_col)!r} holds {self.dim}-dimensional vectors "
                f"but the queries have {q_all.shape[-1]} dimensions: the table was written under another contract; "
                "point vector= at the column this model wrote, or audit with the contract that made it"
            )
        query = self._query_sql(exact=exact)
        out: list[list[tuple[str, float]]] = []
        try:
            with self.conn.transaction():
                if exact:
                    self._exact_settings()
                for q in q_all:
                    lit = self._literal(q)
                    rows = self.conn.execute(query, [lit, lit, k]).fetchall()
                    out.append([(str(cid), self._score(float(d))) for cid, d in rows if d is not None])
        except psycopg.Error as exc:
            raise self._sql_error("searching" + (" exactly" if exact else " through the index"), exc) from None
        return out

    def close(self) -> None:
        self.conn.close()


class PgvectorSourceWithText(PgvectorSource):
    """A table opened with ``text=COL``: also a :class:`~evalsuite.audit.source.TextSource`."""

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        return self._texts(ids)


def open_pgvector(uri: str, options: SourceOptions) -> IndexSource:
    target = parse_uri(uri)
    return (PgvectorSourceWithText if target.text_col else PgvectorSource)(target, options)


KIND = StoreKind(
    name="pgvector",
    schemes=("postgresql://", "postgres://"),
    extra="pgvector",
    module="psycopg",
    open=open_pgvector,
    help=(
        "a PostgreSQL + pgvector table (postgresql://USER@HOST:PORT/DB?table=T&id=COL&vector=COL[&text=COL]"
        "[&metric=cosine|ip|l2][&ef_search=N][&probes=N], and any libpq parameter: sslmode=require, "
        "host=/var/run/postgresql, service=NAME, ...); the password only from $PGPASSWORD, --password-env or ~/.pgpass"
    ),
)
