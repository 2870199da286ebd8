"""Standard PostgreSQL connection URIs against the real pgvector server: libpq's own parameters pass through
(a Unix socket, sslmode, a service file, PG* variables, any connection parameter), evalsuite's keys are taken out
first, an unknown key is refused naming both lists, a secret in the URI is refused without echoing it.

Each test names the one-line bug it catches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.audit.source import SourceOptions
from evalsuite.audit.stores import open_source
from evalsuite.audit.stores.libpq import PARAMS, libpq_keywords, parse_uri
from evalsuite.base.errors import IndexSourceError
from evalsuite.cli import main

from ..conftest import ALL_PASS, Ingest, audit_argv
from ..pg import PASSWORD, SUPERUSER
from .conftest import DB, PgFixture

pytestmark = pytest.mark.xdist_group("pgvector")
COLUMNS = "table=faithful_hnsw&id=id&vector=embedding"


def _socket_uri(pg: PgFixture, more: str = "") -> str:
    """What pgserver prints: no host in the authority, the socket directory as host=."""
    sock = pg.server.root / "sock"
    return f"postgresql:///{DB}?host={sock}&port={pg.server.port}&user={SUPERUSER}&{COLUMNS}{more}"


# -- parsing (no server) --------------------------------------------------------------------------------------
def test_libpq_parameters_pass_through_and_evalsuites_keys_are_taken_out():
    """Bugs: evalsuite's keys left in the string libpq parses (it refuses 'table'); a libpq key dropped."""
    uri = (
        "postgresql://app@db.example:5433/rag?table=s.chunks&id=id&vector=embedding&sslmode=require"
        "&sslrootcert=/etc/ca.pem&connect_timeout=3&target_session_attrs=read-write&application_name=ingest-audit"
        "&options=-c%20statement_timeout%3D5000&ef_search=80"
    )
    t = parse_uri(uri)
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(t.conninfo)
    assert given == {
        "user": "app",
        "host": "db.example",
        "port": "5433",
        "dbname": "rag",
        "sslmode": "require",
        "sslrootcert": "/etc/ca.pem",
        "connect_timeout": "3",
        "target_session_attrs": "read-write",
        "application_name": "ingest-audit",
        "options": "-c statement_timeout=5000",
    }
    assert (t.schema, t.table, t.id_col, t.vector_col, dict(t.settings)) == (
        "s",
        "chunks",
        "id",
        "embedding",
        {"hnsw.ef_search": 80},
    )


def test_every_key_libpq_knows_is_accepted_and_its_list_comes_from_libpq():
    """Bug: a fixed list of libpq keys (a newer libpq's parameter refused)."""
    keys, secret = libpq_keywords()
    assert {"host", "hostaddr", "port", "sslmode", "sslrootcert", "sslcert", "sslkey", "service", "options"} <= keys
    assert {"password", "sslpassword"} <= secret
    for key in sorted(keys - secret - {"dbname", "user", "host", "port"}):
        parse_uri(f"postgresql://h/db?{COLUMNS}&{key}=1")  # no refusal for any of them


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("&tabel=x", ["unknown parameter 'tabel'", "evalsuite's parameters are " + ", ".join(PARAMS), "sslmode"]),
        (f"&password={PASSWORD}", ["the URI carries password=, a secret", "PGPASSWORD"]),
        (f"&sslpassword={PASSWORD}", ["the URI carries sslpassword=, a secret"]),
        ("&sslmode=require&sslmode=disable", ["parameter 'sslmode' given twice"]),
        ("&sslmode=", ["parameter 'sslmode' is empty"]),
    ],
)
def test_unknown_secret_repeated_or_empty_keys_are_refused_without_the_secret(query: str, expected: list[str]):
    with pytest.raises(IndexSourceError) as err:
        parse_uri(f"postgresql://app@h:5432/db?{COLUMNS}{query}")
    for text in expected:
        assert text in str(err.value)
    assert PASSWORD not in str(err.value)


def test_the_database_may_come_from_dbname_a_service_or_the_environment(monkeypatch: pytest.MonkeyPatch):
    """Bug: the database required in the path only (a service or $PGDATABASE refused)."""
    monkeypatch.delenv("PGDATABASE", raising=False)
    monkeypatch.delenv("PGSERVICE", raising=False)
    assert parse_uri(f"postgresql://h?dbname=rag&{COLUMNS}").dbname == "rag"
    assert parse_uri(f"postgresql://?service=prod&{COLUMNS}").dbname == "(service prod)"
    with pytest.raises(IndexSourceError, match="name the database"):
        parse_uri(f"postgresql://h?{COLUMNS}")
    monkeypatch.setenv("PGDATABASE", "fromenv")
    assert parse_uri(f"postgresql://h?{COLUMNS}").dbname == "fromenv"


# -- the real server ---------------------------------------------------------------------------------------
def test_the_unix_socket_uri_pgserver_prints_opens_the_table(pg: PgFixture, pg_password: str):
    """Bug: host= refused or replaced by 'localhost' (the socket never used)."""
    src = open_source(_socket_uri(pg), SourceOptions())
    try:
        info = src.info()
        assert info.count == len(pg.tables.ids) and info.dim == 384
        assert str(pg.server.root / "sock") in info.location and "Unix socket" in info.location
        row = src.conn.execute("SELECT inet_server_addr()").fetchone()  # type: ignore[attr-defined]
        assert row is not None and row[0] is None  # NULL: the connection is over the socket, not TCP
    finally:
        src.close()


@pytest.mark.parametrize("sslmode", ["disable", "prefer", "allow"])
def test_tcp_with_an_sslmode_the_server_can_meet_connects(pg: PgFixture, pg_password: str, sslmode: str):
    src = open_source(pg.uri("faithful_hnsw", sslmode=sslmode), SourceOptions())
    try:
        ssl = src.conn.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()  # type: ignore[attr-defined]
        assert ssl is not None and ssl[0] is False
    finally:
        src.close()


def test_sslmode_require_against_a_server_without_tls_is_refused_naming_it(pg: PgFixture, pg_password: str):
    """Bug: sslmode dropped (a connection in clear text where the user asked for TLS)."""
    with pytest.raises(IndexSourceError) as err:
        open_source(pg.uri("faithful_hnsw", sslmode="require"), SourceOptions())
    msg = str(err.value)
    assert "does not offer TLS" in msg and "sslmode=require" in msg
    assert PASSWORD not in msg


def test_libpq_connection_parameters_reach_the_session(pg: PgFixture, pg_password: str):
    """Bugs: application_name overridden by evalsuite's default, options= (a GUC for the session) dropped."""
    uri = pg.uri("faithful_hnsw", application_name="nightly-audit", options="-c%20statement_timeout%3D4321")
    src = open_source(uri + "&connect_timeout=5&target_session_attrs=any&keepalives=1", SourceOptions())
    try:
        conn = src.conn  # type: ignore[attr-defined]
        assert conn.execute("SHOW application_name").fetchone()[0] == "nightly-audit"
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "4321ms"
    finally:
        src.close()


def test_a_service_file_and_pg_environment_variables_work_as_for_psql(
    pg: PgFixture, pg_password: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Bugs: host/port defaulted by evalsuite (localhost:5432) over what libpq reads from the service or PG*."""
    service = tmp_path / "pg_service.conf"
    service.write_text(f"[audit-svc]\nhost=127.0.0.1\nport={pg.server.port}\ndbname={DB}\nuser={SUPERUSER}\n")
    monkeypatch.setenv("PGSERVICEFILE", str(service))
    src = open_source(f"postgresql://?service=audit-svc&{COLUMNS}", SourceOptions())
    assert src.info().count == len(pg.tables.ids)
    src.close()
    for name, value in (("PGHOST", "127.0.0.1"), ("PGPORT", str(pg.server.port)), ("PGUSER", SUPERUSER)):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PGDATABASE", DB)
    src = open_source(f"postgresql://?{COLUMNS}", SourceOptions())
    assert src.info().count == len(pg.tables.ids) and f":{pg.server.port}/{DB}" in src.info().location
    src.close()


def test_the_password_file_serves_when_no_password_variable_is_set(
    pg: PgFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Bug: an empty password sent when $PGPASSWORD is unset (libpq's ~/.pgpass never consulted)."""
    monkeypatch.delenv("PGPASSWORD", raising=False)
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{pg.server.port}:{DB}:{SUPERUSER}:{PASSWORD}\n")
    passfile.chmod(0o600)
    src = open_source(pg.uri("faithful_hnsw", passfile=str(passfile)), SourceOptions())
    assert src.info().count == len(pg.tables.ids)
    src.close()


def test_evalsuite_audit_over_the_unix_socket_end_to_end(
    ingest: Ingest, pg: PgFixture, pg_password: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    code = main(audit_argv(ingest.dataset, _socket_uri(pg, "&sslmode=disable"), tmp_path / "out"))
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads((tmp_path / "out" / "audit.json").read_text(encoding="utf-8"))
    assert {v["check"]: v["status"] for v in data["index"]["verdicts"]} == ALL_PASS
    assert PASSWORD not in out and PASSWORD not in json.dumps(data)
