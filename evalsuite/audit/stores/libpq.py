"""The libpq side of the pgvector store: a ``postgresql://`` URI split into evalsuite's keys and libpq's own
connection parameters, the connection, and its failures named.

The URI is libpq's own (`the connection URI`_): everything psql accepts works here — ``sslmode``, ``sslrootcert``,
``host=/var/run/postgresql`` for a Unix socket (``postgresql:///db?host=...``, what ``pgserver`` prints),
``hostaddr``, ``connect_timeout``, ``options``, ``target_session_attrs``, ``service`` (with ``PGSERVICEFILE`` /
``~/.pg_service.conf``), and the ``PG*`` environment variables for whatever the URI leaves out. evalsuite's own keys
(:data:`PARAMS`) are taken out first; what remains goes to libpq unchanged. The keys libpq knows are read from
libpq itself (``PQconndefaults``), so a newer libpq's parameters pass too; a key that is neither is refused with
both lists. libpq's secret parameters (``password``, ``sslpassword``, ...: the ones it displays as ``*``) are
refused in the URI: the password comes only from an environment variable (``--password-env``, default
``PGPASSWORD``) or libpq's password file (``passfile``, ``~/.pgpass``).

.. _the connection URI: https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING-URIS
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from ...base.errors import IndexSourceError
from ...encode.secret import cut, redact
from ..source import Metric
from ..uri_params import split_params

if TYPE_CHECKING:
    import psycopg

DEFAULT_PASSWORD_ENV = "PGPASSWORD"
PARAMS = ("table", "id", "vector", "text", "metric", "ef_search", "probes")  # evalsuite's keys: taken out first
REQUIRED = ("table", "id", "vector")
OPERATOR: Mapping[Metric, str] = {"cosine": "<=>", "ip": "<#>", "l2": "<->"}
_KEY_MATERIAL = ("scram_client_key", "scram_server_key")  # debug options that carry keys: secrets all the same
# the exact search: the same query with every index path off (SET LOCAL, its own transaction)
EXACT_SETTINGS = (
    ("enable_indexscan", "off"),
    ("enable_indexonlyscan", "off"),
    ("enable_bitmapscan", "off"),
    ("enable_seqscan", "on"),
)
DEFAULTS = {"connect_timeout": "10", "application_name": "evalsuite-audit"}  # unless the URI sets them


@functools.cache
def libpq_keywords() -> tuple[frozenset[str], frozenset[str]]:
    """(every connection parameter this libpq knows, those it treats as secrets), from libpq itself."""
    from psycopg import pq

    options = pq.Conninfo.get_defaults()
    keys = frozenset(o.keyword.decode() for o in options)
    secret = frozenset(o.keyword.decode() for o in options if o.dispchar == b"*") | frozenset(_KEY_MATERIAL)
    return keys, secret & keys


@dataclass(frozen=True)
class PgTarget:
    """What a ``postgresql://`` URI names (never a password): libpq's connection string and evalsuite's keys.
    ``host``, ``port``, ``dbname`` and ``user`` are for messages: as the URI or the environment give them, and as
    the server reports them once connected."""

    conninfo: str  # the URI with evalsuite's keys taken out: what libpq connects with
    user: str | None
    host: str
    port: int | str
    dbname: str
    schema: str | None
    table: str
    id_col: str
    vector_col: str
    text_col: str | None = None
    metric: Metric | None = None
    settings: Mapping[str, int] = field(default_factory=dict)  # hnsw.ef_search / ivfflat.probes from the URI
    libpq: Mapping[str, str] = field(default_factory=dict)  # the libpq parameters the URI's query gave

    @property
    def table_name(self) -> str:
        return f"{self.schema}.{self.table}" if self.schema else self.table

    @property
    def location(self) -> str:
        return f"{self.host}:{self.port}/{self.dbname} table={self.table_name}"

    def column(self, col: str) -> str:
        return f"{self.table_name}.{col}"


def _shown(uri: str) -> str:
    """The URI as messages show it: scheme, user, host, port and path; never the password or the query."""
    split = urlsplit(uri)
    user = f"{split.username}@" if split.username else ""
    try:
        port = "" if split.port is None else f":{split.port}"
    except ValueError:
        port = ""
    return f"{split.scheme}://{user}{split.hostname or ''}{port}{split.path}"


def parse_uri(uri: str) -> PgTarget:
    """The target of ``uri``; IndexSourceError naming the missing or bad part (a secret in it: refused)."""
    from psycopg import conninfo as ci

    split = urlsplit(uri)
    shown = _shown(uri)
    if split.password is not None:
        raise IndexSourceError(
            f"--index {shown}: the URI carries a password; remove it from the URI and export it in an "
            f"environment variable ({DEFAULT_PASSWORD_ENV}, or the one --password-env names) instead"
        )
    keys, secret = libpq_keywords()
    # libpq decodes %XX only ('+' is a plus sign): the pairs are decoded that way, and libpq's own are passed on
    # exactly as written
    segments = [seg for seg in split.query.split("&") if seg]
    parts = split_params(
        shown,
        [(unquote(k), unquote(v)) for k, _, v in (seg.partition("=") for seg in segments)],
        own=PARAMS,
        client=keys,
        client_name="libpq",
        secret=secret,
        secret_hint=(
            f" and export the password in an environment variable ({DEFAULT_PASSWORD_ENV}, or the one --password-env "
            "names), or keep it in libpq's password file (passfile, ~/.pgpass)"
        ),
    )
    params = parts.own
    missing = [k for k in REQUIRED if k not in params]
    if missing:
        raise IndexSourceError(
            f"--index {shown}: missing {', '.join(f'{k}=' for k in missing)}; the URI names the table and its "
            "columns: postgresql://USER@HOST:PORT/DB?table=T&id=COL&vector=COL[&text=COL] (and any libpq "
            "parameter: sslmode=require, host=/var/run/postgresql, service=NAME, ...)"
        )
    query = "&".join(seg for seg in segments if unquote(seg.partition("=")[0]) in parts.client)
    conninfo = f"{split.scheme}://{split.netloc}{split.path}" + (f"?{query}" if query else "")
    try:
        given = ci.conninfo_to_dict(conninfo)
    except Exception as exc:  # psycopg.ProgrammingError: libpq could not parse it
        raise IndexSourceError(f"--index {shown}: libpq cannot parse this URI ({cut(redact(str(exc)))})") from None
    dbname = given.get("dbname") or os.environ.get("PGDATABASE")
    if not dbname and not (given.get("service") or os.environ.get("PGSERVICE")):
        raise IndexSourceError(
            f"--index {shown}: name the database after the host (postgresql://USER@HOST:PORT/DB?...), with dbname=, "
            "a service= or $PGDATABASE"
        )
    if "/" in unquote(split.path.lstrip("/")):
        raise IndexSourceError(
            f"--index {shown}: the database name cannot hold '/': postgresql://USER@HOST:PORT/DB?..."
        )
    metric = params.get("metric")
    if metric is not None and metric not in OPERATOR:
        raise IndexSourceError(f"--index {shown}: metric={metric!r}; give metric=cosine, metric=ip or metric=l2")
    settings: dict[str, int] = {}
    for key, guc in (("ef_search", "hnsw.ef_search"), ("probes", "ivfflat.probes")):
        if key in params:
            try:
                settings[guc] = int(params[key])
            except ValueError:
                raise IndexSourceError(f"--index {shown}: {key}={params[key]!r} is not an integer") from None
            if settings[guc] < 1:
                raise IndexSourceError(f"--index {shown}: {key} must be at least 1")
    schema, _, table = params["table"].rpartition(".")
    host = str(given.get("host") or given.get("hostaddr") or os.environ.get("PGHOST") or "(default socket)")
    return PgTarget(
        conninfo=conninfo,
        user=str(given["user"]) if given.get("user") else os.environ.get("PGUSER"),
        host=host,
        port=str(given.get("port") or os.environ.get("PGPORT") or 5432),
        dbname=str(dbname or f"(service {given.get('service') or os.environ.get('PGSERVICE')})"),
        schema=schema or None,
        table=table,
        id_col=params["id"],
        vector_col=params["vector"],
        text_col=params.get("text"),
        metric=metric,  # type: ignore[arg-type]  # checked against OPERATOR above
        settings=settings,
        libpq=dict(parts.client),
    )


def connect(target: PgTarget, password: str | None, env: str) -> tuple[psycopg.Connection[Any], PgTarget]:
    """An autocommit connection as libpq makes it from the URI (its parameters, the environment, the service file,
    ``~/.pgpass``), the password from ``env`` when it is set; and the target with the host, port, database and
    user the server reports. IndexSourceError naming what to do when it fails."""
    import psycopg

    extra: dict[str, Any] = {k: v for k, v in DEFAULTS.items() if k not in target.libpq}
    if password is not None:
        extra["password"] = password
    try:
        conn: psycopg.Connection[Any] = psycopg.connect(
            target.conninfo,
            autocommit=True,
            prepare_threshold=None,  # never prepared: a cached plan made with index scans off would serve
            **extra,  # the approximate search too (a prepared statement keeps its plan across SET)
        )
    except psycopg.Error as exc:
        raise connect_error(target, env, exc) from None
    info = conn.info
    host = info.host if not info.host.startswith("/") else f"{info.host} (Unix socket)"
    from dataclasses import replace

    return conn, replace(target, host=host, port=info.port, dbname=info.dbname, user=info.user)


def connect_error(target: PgTarget, env: str, exc: Exception) -> IndexSourceError:
    """A connection failure, named with what to do; the server's text redacted and cut."""
    text = str(exc)
    low = text.lower()
    where = f"{target.host}:{target.port}/{target.dbname}"
    if "password authentication failed" in low or "authentication failed" in low:
        what = (
            f"the server at {where} refused the password for user {target.user or '(default)'}: export the right "
            f"password in ${env} (it is read from there only, never from the URI)"
        )
    elif "no password supplied" in low or "password is required" in low:
        what = f"the server at {where} asks for a password and ${env} is not set: export it there"
    elif "server does not support ssl" in low or ("ssl" in low and "not support" in low):
        what = (
            f"the server at {where} does not offer TLS, and the URI asks for it (sslmode={target.libpq.get('sslmode')}): "
            "enable ssl on the server, or connect with sslmode=prefer / disable where that is acceptable"
        )
    elif "invalid sslmode" in low or ("invalid" in low and "value" in low):
        what = "libpq refused a connection parameter of the URI; fix it as the message says"
    elif "does not exist" in low and "database" in low:
        what = f"the server at {where} has no database {target.dbname!r}: fix the database name in the URI"
    elif "role" in low and "does not exist" in low:
        what = f"the server at {where} has no role {target.user!r}: fix the user name in the URI"
    elif "definition of service" in low or "service file" in low:
        what = "libpq cannot find the service the URI names: check PGSERVICEFILE or ~/.pg_service.conf"
    elif any(s in low for s in ("connection refused", "could not connect", "timeout", "no route", "name or service")):
        what = f"no PostgreSQL server answers at {target.host}:{target.port}: start it, or fix the host and port in the URI"
    else:
        what = f"cannot connect to {where}"
    return IndexSourceError(redact(f"--index postgresql://{target.location}: {what} ({cut(text)})"))


def raw_vectors(conn: psycopg.Connection[Any]) -> bool:
    """pgvector's ``vector`` read as its raw binary bytes (decoded with numpy, no ``pgvector`` package); False when
    the type is not visible."""
    from psycopg import adapt, pq
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        return False

    class RawLoader(adapt.Loader):
        format = pq.Format.BINARY

        def load(self, data: Any) -> bytes:
            return bytes(data)

    conn.adapters.register_loader(info.oid, RawLoader)
    return True


def plan_scans(plan: object) -> str:
    """The scans of an ``EXPLAIN (FORMAT JSON)`` plan ("Index Scan using t_idx; Seq Scan"), or "?"."""
    import json

    if isinstance(plan, str):
        plan = json.loads(plan)
    scans: list[str] = []

    def walk(node: Mapping[str, Any]) -> None:
        kind = str(node.get("Node Type", ""))
        if "Scan" in kind:
            scans.append(f"{kind} using {node['Index Name']}" if node.get("Index Name") else kind)
        for child in node.get("Plans", []):
            walk(child)

    if isinstance(plan, list) and plan and isinstance(plan[0], dict):
        walk(plan[0]["Plan"])
    return "; ".join(scans) or "?"
