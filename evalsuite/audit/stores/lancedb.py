"""LanceDB tables: ``lancedb:DIR?table=T[&id=COL&vector=COL&text=COL]``.

- **Columns**: ``id`` (default ``id``; a string or integer column, read as text: an integer id 12 is the chunk
  id ``"12"``; a null id is streamed as ``""``), ``vector`` (default ``vector``, LanceDB's own default; a
  fixed-size list of floats, or a list of floats of one length), ``text`` (optional: the chunk texts).
- **Vectors**: streamed in Arrow record batches of a plain scan (``search().select(...).to_batches``), so
  memory is bounded by the batch; a null vector is streamed as NaNs (named non-finite by the structure check).
- **Metric**: ``metric=cosine|ip|l2`` in the URI, else the distance type of the table's vector index on the
  column (LanceDB's ``dot`` is ``ip``). Scores are higher-is-better: cosine similarity (1 - distance), inner
  product (LanceDB's dot distance is 1 - x·y), negated squared L2 (as FAISS).
- **Search as deployed**: the table's index with the query-time parameters the application uses, given in the
  URI (``nprobes=N``, ``refine=N`` for ``refine_factor``, ``ef=N`` for an HNSW sub-index); without them
  LanceDB's defaults, read back from the query plan and reported. **Exact search**: ``bypass_vector_index()``
  with the same distance type (LanceDB's flat search would otherwise default to L2).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import numpy as np

from ...base.errors import IndexSourceError
from ..source import IndexInfo, IndexSource, Metric, SourceOptions, StoreKind
from ..uri_params import redacted, split_params

FETCH_CHUNK = 1000  # ids per IN (...) filter
PARAMS = ("table", "id", "vector", "text", "metric", "nprobes", "refine", "ef")  # evalsuite's keys
# lancedb.connect's own options for a local database, passed through (seconds -> its timedelta); api_key is LanceDB
# Cloud's secret, refused in a URI
CLIENT_PARAMS = ("read_consistency_interval",)
SECRET_PARAMS = ("api_key",)
LANCE_METRIC: Mapping[str, Metric] = {"cosine": "cosine", "dot": "ip", "l2": "l2"}
DISTANCE_TYPE: Mapping[Metric, str] = {"cosine": "cosine", "ip": "dot", "l2": "l2"}


@dataclass(frozen=True)
class LanceTarget:
    """What a ``lancedb:`` URI names."""

    path: Path
    table: str
    id_col: str = "id"
    vector_col: str = "vector"
    text_col: str | None = None
    metric: Metric | None = None
    query: Mapping[str, int] = field(default_factory=dict)  # nprobes / refine / ef as the application sets them
    connect: Mapping[str, Any] = field(default_factory=dict)  # lancedb.connect's own options from the URI

    @property
    def location(self) -> str:
        return f"{self.path} table={self.table}"


def parse_uri(uri: str) -> LanceTarget:
    """The target of ``lancedb:DIR?table=T...``; IndexSourceError naming the missing or bad part."""
    shown = redacted(uri, SECRET_PARAMS)  # the URI as errors show it
    body = uri.removeprefix("lancedb:")
    path, _, query = body.partition("?")
    if not path:
        raise IndexSourceError(f"--index {shown}: name the database directory: lancedb:DIR?table=T")
    parts = split_params(
        shown,
        parse_qsl(query, keep_blank_values=True),
        own=PARAMS,
        client=CLIENT_PARAMS,
        client_name="lancedb.connect",
        secret=SECRET_PARAMS,
        secret_hint=" (a local LanceDB directory needs no key)",
    )
    params = parts.own
    connect: dict[str, Any] = {}
    if "read_consistency_interval" in parts.client:
        text = parts.client["read_consistency_interval"]
        try:
            seconds = float(text)
        except ValueError:
            seconds = -1.0
        if not seconds >= 0:
            raise IndexSourceError(
                f"--index {shown}: read_consistency_interval={text!r}; give the seconds between checks for other "
                "writers' commits (0: check before every read)"
            )
        connect["read_consistency_interval"] = timedelta(seconds=seconds)
    if "table" not in params:
        raise IndexSourceError(f"--index {shown}: missing table=; name the table: lancedb:DIR?table=T")
    metric = params.get("metric")
    if metric is not None and metric not in DISTANCE_TYPE:
        raise IndexSourceError(f"--index {shown}: metric={metric!r}; give metric=cosine, metric=ip or metric=l2")
    knobs: dict[str, int] = {}
    for key in ("nprobes", "refine", "ef"):
        if key in params:
            try:
                knobs[key] = int(params[key])
            except ValueError:
                raise IndexSourceError(f"--index {shown}: {key}={params[key]!r} is not an integer") from None
            if knobs[key] < 1:
                raise IndexSourceError(f"--index {shown}: {key} must be at least 1")
    return LanceTarget(
        path=Path(path).expanduser(),
        table=params["table"],
        id_col=params.get("id", "id"),
        vector_col=params.get("vector", "vector"),
        text_col=params.get("text"),
        metric=metric,  # type: ignore[arg-type]  # checked against DISTANCE_TYPE above
        query=knobs,
        connect=connect,
    )


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class LanceSource(IndexSource):
    """An open LanceDB table; see the module docstring."""

    def __init__(self, target: LanceTarget) -> None:
        import lancedb
        import pyarrow as pa

        self.target = target
        self._where = f"--index lancedb:{target.location}"
        if not target.path.is_dir():
            raise self._fail(f"{target.path} is not a directory; give the LanceDB directory the ingest job wrote")
        db = lancedb.connect(str(target.path), **target.connect)
        try:
            self.table: Any = db.open_table(target.table)  # Any: close() drops it
        except (ValueError, FileNotFoundError):
            names = sorted(str(n) for n in db.list_tables().tables)
            raise self._fail(
                f"table {target.table!r} does not exist in {target.path}; its tables are {', '.join(names) or '(none)'}"
                ": check table="
            ) from None
        schema = self.table.schema
        for param, col in (("id", target.id_col), ("vector", target.vector_col), ("text", target.text_col)):
            if col is not None and col not in schema.names:
                raise self._fail(
                    f"column {target.table}.{col} (given as {param}=) does not exist; the table's columns are "
                    f"{', '.join(schema.names)}"
                )
        id_type = schema.field(target.id_col).type
        if not (pa.types.is_string(id_type) or pa.types.is_large_string(id_type) or pa.types.is_integer(id_type)):
            raise self._fail(
                f"id column {target.table}.{target.id_col} is of type {id_type}; chunk ids are read as text from a "
                "string or integer column: give id= the column holding the chunk ids"
            )
        self.int_ids = pa.types.is_integer(id_type)
        vec_type = schema.field(target.vector_col).type
        if pa.types.is_fixed_size_list(vec_type) and pa.types.is_floating(vec_type.value_type):
            self.dim = int(vec_type.list_size)
        elif pa.types.is_list(vec_type) and pa.types.is_floating(vec_type.value_type):
            first = self.table.search().select([target.vector_col]).limit(1).to_arrow()
            self.dim = len(first.column(0)[0].as_py() or []) if first.num_rows else 0
        else:
            raise self._fail(
                f"vector column {target.table}.{target.vector_col} is of type {vec_type}, not a list of floats: "
                "give vector= the column holding the embeddings"
            )
        self.count = int(self.table.count_rows())
        if self.count == 0:
            raise self._fail(
                f"table {target.table!r} has no rows: nothing to audit; point table= at the table the ingest job "
                "wrote (or run it first)"
            )
        self._index()

    def _fail(self, message: str) -> IndexSourceError:
        return IndexSourceError(f"{self._where}: {message}")

    def __repr__(self) -> str:
        return f"LanceSource({self.target.location})"

    def _index(self) -> None:
        t = self.target
        indexes = [ix for ix in self.table.list_indices() if list(ix.columns) == [t.vector_col]]
        found: list[tuple[str, str, Metric | None]] = []
        for ix in indexes:
            stats = self.table.index_stats(ix.name)
            kind = str(getattr(stats, "index_type", "") or ix.index_type)
            found.append((str(ix.name), kind, LANCE_METRIC.get(str(getattr(stats, "distance_type", "")).lower())))
        metric = t.metric
        if metric is None:
            metrics = {m for _, _, m in found if m is not None}
            if len(metrics) != 1:
                what = "no vector index" if not found else "vector indexes of several distance types"
                raise self._fail(
                    f"column {t.table}.{t.vector_col} has {what}: give metric=cosine, metric=ip or metric=l2 in the "
                    "URI (the distance type the application queries with)"
                )
            metric = metrics.pop()
        self.metric: Metric = metric
        params: dict[str, int | float | str] = {}
        used = [ix for ix in found if ix[2] == metric]
        if not used:
            self.index_type = "flat"
            if found:
                params["unused_indexes"] = ", ".join(f"{n} ({k}, {m})" for n, k, m in found)
        else:
            name, kind, _ = used[0]
            self.index_type = kind
            params["index"] = name
            unindexed = next(int(ix.num_unindexed_rows or 0) for ix in indexes if ix.name == name)
            if unindexed:
                params["unindexed_rows"] = unindexed  # searched flat beside the index
            details = next(ix.index_details for ix in indexes if ix.name == name) or {}
            compression = details.get("compression") if isinstance(details, dict) else None
            if isinstance(compression, dict):
                for key in ("num_bits", "num_sub_vectors"):
                    if key in compression:
                        params[key] = int(compression[key])
        probe = np.ones(self.dim, dtype=np.float32)
        plan = str(self._query(probe, 10, exact=False).explain_plan(True))
        for key, pattern in (("nprobes", r"minimum_nprobes=(\d+)"), ("max_nprobes", r"maximum_nprobes=Some\((\d+)\)")):
            m = re.search(pattern, plan)
            if m:
                params[key] = int(m.group(1))
        for key, value in t.query.items():
            params["refine_factor" if key == "refine" else key] = value
        if "KNNVectorDistance" in plan and "ANN" not in plan:
            params["plan"] = "flat scan"
        elif "ANN" in plan:
            params["plan"] = "ANN index"
        exact_plan = str(self._query(probe, 10, exact=True).explain_plan(True))
        if "ANN" in exact_plan:
            raise self._fail(f"the exact search still uses the index: {exact_plan.strip()}")
        self.params = params

    def info(self) -> IndexInfo:
        t = self.target
        return IndexInfo(
            store="lancedb",
            location=f"{t.location} id={t.id_col} vector={t.vector_col}",
            count=self.count,
            dim=self.dim,
            metric=self.metric,
            index_type=self.index_type,
            search_params=dict(self.params),
        )

    # -- reading -------------------------------------------------------------------------------------
    def _ids(self, column: Any) -> list[str]:
        return ["" if v is None else str(v) for v in column.to_pylist()]

    def _vectors(self, column: Any, ids: Sequence[str]) -> np.ndarray:
        """(n, dim) float32 from an Arrow list column; a null row is NaNs, a row of another length an error."""
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        n = len(arr)
        out = np.full((n, self.dim), np.nan, dtype=np.float32)
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        if not valid.any():
            return out
        present = arr.filter(pa.array(valid)) if not valid.all() else arr
        lengths = np.asarray(pc.list_value_length(present).to_numpy(zero_copy_only=False))
        bad = np.flatnonzero(lengths != self.dim)
        if bad.size:
            row = int(np.flatnonzero(valid)[bad[0]])
            raise self._fail(
                f"row with id {ids[row]!r} holds a {int(lengths[bad[0]])}-dimensional vector in "
                f"{self.target.table}.{self.target.vector_col} where the others hold {self.dim}: the column mixes "
                "dimensions; re-embed that row"
            )
        flat = np.asarray(present.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        out[valid] = flat.reshape(-1, self.dim)
        return out

    def iter_vectors(self, batch_size: int) -> Iterator[tuple[list[str], np.ndarray]]:
        t = self.target
        reader = self.table.search().select([t.id_col, t.vector_col]).to_batches(batch_size)
        for batch in reader:
            for start in range(0, batch.num_rows, batch_size):  # a reader may hand out larger batches
                part = batch.slice(start, batch_size)
                ids = self._ids(part.column(0))
                yield ids, self._vectors(part.column(1), ids)

    def _filter(self, ids: Sequence[str]) -> str | None:
        col = f"`{self.target.id_col}`"
        if self.int_ids:
            ints = [i for i in ids if i.lstrip("-").isdigit() and len(i) < 20]
            return f"{col} IN ({', '.join(ints)})" if ints else None
        return f"{col} IN ({', '.join(_quote(i) for i in ids)})"

    def fetch(self, ids: Sequence[str]) -> dict[str, list[np.ndarray]]:
        t = self.target
        out: dict[str, list[np.ndarray]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), FETCH_CHUNK):
            where = self._filter(unique[start : start + FETCH_CHUNK])
            if where is None:
                continue
            got = self.table.search().where(where).select([t.id_col, t.vector_col]).to_arrow()
            cids = self._ids(got.column(0))
            for cid, vec in zip(cids, self._vectors(got.column(1), cids), strict=True):
                out.setdefault(cid, []).append(vec)
        return out

    def _texts(self, ids: Sequence[str]) -> dict[str, str]:
        """Each asked id's text from the ``text=`` column (the first row of a duplicated id)."""
        t = self.target
        if t.text_col is None:
            raise self._fail("no text column: add text=COL to the URI, or give --dataset with the chunk texts")
        out: dict[str, str] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), FETCH_CHUNK):
            where = self._filter(unique[start : start + FETCH_CHUNK])
            if where is None:
                continue
            got = self.table.search().where(where).select([t.id_col, t.text_col]).to_arrow()
            for cid, text in zip(self._ids(got.column(0)), got.column(1).to_pylist(), strict=True):
                if text is not None:
                    out.setdefault(cid, str(text))
        return out

    # -- searching -------------------------------------------------------------------------------------
    def _query(self, q: np.ndarray, k: int, *, exact: bool) -> Any:
        t = self.target
        query: Any = (
            self.table.search(np.asarray(q, dtype=np.float32), vector_column_name=t.vector_col)
            .distance_type(DISTANCE_TYPE[self.metric])
            .select([t.id_col])
            .limit(k)
        )
        if exact:
            return query.bypass_vector_index()
        if "nprobes" in t.query:
            query = query.nprobes(t.query["nprobes"])
        if "refine" in t.query:
            query = query.refine_factor(t.query["refine"])
        if "ef" in t.query:
            query = query.ef(t.query["ef"])
        return query

    def _score(self, distance: float) -> float:
        if self.metric == "l2":
            return -distance  # LanceDB's l2 is the squared distance, as FAISS's
        return 1.0 - distance  # cosine: 1 - cos; dot: 1 - x·y

    def search(self, queries: np.ndarray, k: int, *, exact: bool) -> list[list[tuple[str, float]]]:
        q_all = np.asarray(queries, dtype=np.float32)
        if q_all.ndim != 2 or q_all.shape[1] != self.dim:
            raise self._fail(
                f"vector column {self.target.table}.{self.target.vector_col} holds {self.dim}-dimensional vectors but "
                f"the queries have {q_all.shape[-1]} dimensions: the table was written under another contract; point "
                "vector= at the column this model wrote, or audit with the contract that made it"
            )
        out: list[list[tuple[str, float]]] = []
        for q in q_all:
            got = self._query(q, k, exact=exact).to_arrow()
            ids = self._ids(got.column(self.target.id_col))
            dists = got.column("_distance").to_pylist()
            out.append([(cid, self._score(float(d))) for cid, d in zip(ids, dists, strict=True) if d is not None])
        return out

    def close(self) -> None:
        self.table = None


class LanceSourceWithText(LanceSource):
    """A table opened with ``text=COL``: also a :class:`~evalsuite.audit.source.TextSource`."""

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        return self._texts(ids)


def open_lancedb(uri: str, options: SourceOptions) -> IndexSource:
    target = parse_uri(uri)
    return (LanceSourceWithText if target.text_col else LanceSource)(target)


KIND = StoreKind(
    name="lancedb",
    schemes=("lancedb:",),
    extra="lancedb",
    module="lancedb",
    open=open_lancedb,
    help=(
        "a LanceDB table (lancedb:DIR?table=T[&id=COL][&vector=COL][&text=COL][&metric=cosine|ip|l2]"
        "[&nprobes=N][&refine=N][&ef=N][&read_consistency_interval=S]); its own ANN search as deployed, "
        "bypass_vector_index() for the exact one"
    ),
)
