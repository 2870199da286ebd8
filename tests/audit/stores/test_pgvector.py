"""The pgvector store against a real PostgreSQL 16 + pgvector server (one per session, loopback, a password).

Each test names the one-line bug it catches."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from evalsuite.audit.source import IndexSource, SourceOptions, TextSource
from evalsuite.audit.stores import open_source
from evalsuite.base.errors import IndexSourceError, MissingExtra

from ..pg import PASSWORD
from .conftest import COLLAPSE_LISTS, SHIFT_BATCH, PgFixture
from .oracle import assert_same_ranking, between_chunks, brute_force, recall

pytestmark = pytest.mark.xdist_group("pgvector")


def _open(uri: str, **options: object) -> IndexSource:
    return open_source(uri, SourceOptions(**options))  # type: ignore[arg-type]


@pytest.mark.parametrize("fetch_rows", [4096, 7])  # 7: each batch of 50 assembled from several cursor fetches
def test_every_row_streams_once_in_bounded_batches_through_a_server_cursor(
    pg: PgFixture, pg_password: str, monkeypatch: pytest.MonkeyPatch, fetch_rows: int
) -> None:
    """Bugs: the last short batch dropped, a batch yielded twice, a step's rows written over another's, a
    client-side fetchall (unbounded memory)."""
    from evalsuite.audit.stores import pgvector

    monkeypatch.setattr(pgvector, "FETCH_ROWS", fetch_rows)
    src = _open(pg.uri("shifted"))
    ids: list[str] = []
    vectors = []
    cursors_seen: list[str] = []
    for batch_ids, batch in src.iter_vectors(50):
        assert len(batch_ids) == len(batch) <= 50
        assert batch.dtype == np.float32 and batch.shape[1] == 384
        if not cursors_seen:  # mid-stream, the rows come from a named cursor held by the server
            cursors_seen = [r[0] for r in src.conn.execute("SELECT name FROM pg_cursors").fetchall()]  # type: ignore[attr-defined]
        ids += batch_ids
        vectors.append(batch)
    assert cursors_seen == ["evalsuite_audit_vectors"]
    t = pg.tables
    assert ids == t.ids  # every row exactly once, in storage (ingest) order
    np.testing.assert_array_equal(np.vstack(vectors), t.shifted)  # bit-exact: the shifted batch as written
    assert len(vectors) == -(-len(t.ids) // 50)
    src.close()


def test_fetch_gives_every_stored_vector_of_an_id_and_omits_ids_not_stored(pg: PgFixture, pg_password: str) -> None:
    """Bugs: a duplicated id collapsed to one vector (a retry's second copy hidden), an unknown id as an empty list."""
    src = _open(pg.uri("dup_batch"))
    t = pg.tables
    got = src.fetch([t.ids[40], t.ids[100], "no-such-chunk", t.ids[40]])
    assert set(got) == {t.ids[40], t.ids[100]}
    assert len(got[t.ids[40]]) == 2 and len(got[t.ids[100]]) == 1
    for vec in got[t.ids[40]]:
        np.testing.assert_array_equal(vec, t.faithful[40])
    np.testing.assert_array_equal(got[t.ids[100]][0], t.faithful[100])
    assert src.info().count == len(t.ids) + 32
    src.close()


@pytest.mark.parametrize(
    ("table", "metric", "scale"),
    [("faithful_hnsw", "cosine", 1.0), ("faithful_ivf", "ip", 1.0), ("l2_hnsw", "l2", 3.0)],
)
def test_exact_search_equals_numpy_brute_force(
    pg: PgFixture, pg_password: str, table: str, metric: str, scale: float
) -> None:
    """Bugs: the index left on in the exact search, a distance not negated (worst first), <#> read as +ip,
    the Euclidean distance where FAISS's squared one is the score."""
    src = _open(pg.uri(table))
    t = pg.tables
    assert src.info().metric == metric  # from the index's operator class
    queries = between_chunks(t.faithful, 12)
    assert_same_ranking(
        src.search(queries, 10, exact=True), brute_force(t.faithful * scale, t.ids, queries, 10, metric)
    )
    src.close()


def test_info_reads_the_index_and_its_settings_as_deployed(pg: PgFixture, pg_password: str) -> None:
    """Bugs: the metric guessed instead of read from the opclass, the index's options or ef_search not reported,
    a plan that silently skips the index."""
    hnsw = _open(pg.uri("faithful_hnsw")).info()
    assert (hnsw.store, hnsw.count, hnsw.dim, hnsw.metric, hnsw.index_type) == (
        "pgvector",
        len(pg.tables.ids),
        384,
        "cosine",
        "hnsw",
    )
    p = hnsw.search_params
    assert (p["opclass"], p["m"], p["ef_construction"], p["ef_search"]) == ("vector_cosine_ops", 16, 64, 40)
    assert str(p["plan"]).startswith("Index Scan using faithful_hnsw_")
    ivf = _open(pg.uri("faithful_ivf", probes="4")).info()
    assert (ivf.metric, ivf.index_type, ivf.search_params["lists"], ivf.search_params["probes"]) == (
        "ip",
        "ivfflat",
        4,
        4,
    )
    assert PASSWORD not in repr(ivf) and "table=faithful_ivf" in ivf.location


def test_a_collapsed_ivf_misses_what_the_exact_search_finds(pg: PgFixture, pg_password: str) -> None:
    """IVFFlat with 40 lists over 160 rows and probes = 1: the store's own search loses most of the exact top 10;
    the same table probed everywhere finds it all. Bugs: the ANN path running the exact query (or the reverse),
    probes from the URI not applied, the exact search's plan reused by the approximate one (psycopg prepares a
    statement run 5 times, and a prepared plan made with index scans off keeps them off: 20 queries here)."""
    t = pg.tables
    queries = between_chunks(t.faithful, 20)
    collapsed = _open(pg.uri("collapse_ivf"))
    info = collapsed.info()
    assert (info.index_type, info.search_params["lists"], info.search_params["probes"]) == (
        "ivfflat",
        COLLAPSE_LISTS,
        1,
    )
    assert str(info.search_params["plan"]).startswith("Index Scan using collapse_ivf_")
    exact = collapsed.search(queries, 10, exact=True)
    assert_same_ranking(exact, brute_force(t.faithful, t.ids, queries, 10, "cosine"))
    assert recall(collapsed.search(queries, 10, exact=False), exact) < 0.6
    everywhere = _open(pg.uri("collapse_ivf", probes=str(COLLAPSE_LISTS)))
    assert everywhere.info().search_params["probes"] == COLLAPSE_LISTS
    assert recall(everywhere.search(queries, 10, exact=False), exact) == 1.0
    faithful = _open(pg.uri("faithful_hnsw"))
    assert recall(faithful.search(queries, 10, exact=False), faithful.search(queries, 10, exact=True)) >= 0.95


def test_a_role_s_settings_are_read_and_its_password_never_shows(
    pg: PgFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A role with ``hnsw.ef_search`` set by ``ALTER ROLE`` (as an application's role is) and the password 'audit',
    which is also the database's name, so every text naming the database would show it. Bug: a setting read
    from the server's default instead of the session, the database name printed unmasked."""
    from evalsuite.encode import secret

    # the password 'audit' is masked in every message of this process once read: keep that to this test, or every
    # later message naming the audit in this worker would show '***'
    monkeypatch.setattr(secret, "_patterns", dict(secret._patterns))
    with pg.server.connect() as admin:
        admin.execute("ALTER ROLE auditor SET hnsw.ef_search = 7")
    monkeypatch.setenv("AUDIT_PW", "audit")
    src = _open(pg.uri("faithful_hnsw", user="auditor"), password_env="AUDIT_PW")
    info = src.info()
    assert info.search_params["ef_search"] == 7
    for shown in (info.location, repr(src), repr(info)):
        assert "audit" not in shown.replace("auditor", "").replace("table=", ""), shown
    src.close()


def test_texts_come_from_the_text_column_only_when_one_is_named(pg: PgFixture, pg_password: str) -> None:
    """Bug: a store without text= claiming to be a TextSource (the audit would then ask it for texts it has not)."""
    t = pg.tables
    with_text = _open(pg.uri("faithful_hnsw", text="body"))
    assert isinstance(with_text, TextSource)
    assert with_text.texts([t.ids[0], t.ids[-1], "nope"]) == {t.ids[0]: t.texts[0], t.ids[-1]: t.texts[-1]}
    assert not isinstance(_open(pg.uri("faithful_hnsw")), TextSource)


def test_integer_ids_are_read_as_text(pg: PgFixture, pg_password: str) -> None:
    """The id rule: an integer id column's values cast to text ("12"); fetching a text chunk id from it finds
    nothing (the audit then names the mismatch). Bug: ints passed through as ints, a text id crashing the cast."""
    src = _open(pg.uri("int_ids"))
    first_ids, _ = next(iter(src.iter_vectors(5)))
    assert first_ids == ["1", "2", "3", "4", "5"]
    got = src.fetch(["12", pg.tables.ids[11], "-3", "99999999999999999999999"])
    assert list(got) == ["12"]
    np.testing.assert_array_equal(got["12"][0], pg.tables.faithful[11])
    assert src.search(pg.tables.faithful[11:12], 1, exact=True)[0][0][0] == "12"


def test_a_null_vector_streams_as_nan_and_a_null_id_as_empty(pg: PgFixture, pg_password: str) -> None:
    """So the structure check names them (non-finite, unknown id) instead of the stream crashing or skipping them."""
    src = _open(pg.uri("nulls"))
    ids, v = next(iter(src.iter_vectors(10)))
    assert ids == [*pg.tables.ids[:3], ""]
    assert np.isnan(v[1]).all() and np.isfinite(v[[0, 2, 3]]).all()


def test_the_shifted_batch_is_visible_through_fetch(pg: PgFixture, pg_password: str) -> None:
    """What the audit's mapping diagnosis reads: inside the shifted batch, id i holds chunk i+1's vector."""
    src = _open(pg.uri("shifted"))
    t = pg.tables
    start, stop = SHIFT_BATCH
    got = src.fetch(t.ids[start : start + 3])
    for i in range(3):
        np.testing.assert_array_equal(got[t.ids[start + i]][0], t.faithful[start + i + 1])
    np.testing.assert_array_equal(src.fetch([t.ids[stop - 1]])[t.ids[stop - 1]][0], t.faithful[start])


# -- bad input: a typed error naming the table / column and what to do, the password never in it ------------
@pytest.mark.parametrize(
    ("table", "params", "expected"),
    [
        ("nope", {}, ["table 'nope' does not exist", "check table="]),
        ("faithful_hnsw", {"id": "chunk"}, ["column 'faithful_hnsw.chunk' (given as id=) does not exist", "body"]),
        ("faithful_hnsw", {"vector": "emb"}, ["column 'faithful_hnsw.emb' (given as vector=) does not exist"]),
        ("faithful_hnsw", {"text": "content"}, ["column 'faithful_hnsw.content' (given as text=) does not exist"]),
        ("wrong_type", {}, ["'wrong_type.embedding' is of type real[]", "give vector= the column"]),
        ("empty", {}, ["table 'empty' has no rows", "point table= at the table the ingest job wrote"]),
        ("noindex", {}, ["no HNSW or IVFFlat index", "give metric=cosine"]),
        ("faithful_hnsw", {"metric": "dot"}, ["metric='dot'", "metric=ip"]),
        ("faithful_hnsw", {"probes": "x"}, ["probes='x' is not an integer"]),
        ("faithful_hnsw", {"tabel": "x"}, ["unknown parameter 'tabel'"]),
    ],
)
def test_bad_table_or_column_is_a_typed_error_naming_it(
    pg: PgFixture, pg_password: str, table: str, params: dict[str, str], expected: list[str]
) -> None:
    with pytest.raises(IndexSourceError) as err:
        _open(pg.uri(table, **params))
    for text in expected:
        assert text in str(err.value)
    assert PASSWORD not in str(err.value)


def test_a_table_without_index_opens_with_an_explicit_metric_and_searches_flat(pg: PgFixture, pg_password: str) -> None:
    src = _open(pg.uri("noindex", metric="ip"))
    info = src.info()
    assert (info.metric, info.index_type, info.search_params["plan"]) == ("ip", "flat", "Seq Scan")
    q = between_chunks(pg.tables.faithful, 5)
    assert_same_ranking(src.search(q, 5, exact=False), brute_force(pg.tables.faithful, pg.tables.ids, q, 5, "ip"))


def test_a_vector_column_of_another_dimension_is_named_with_the_remedy(pg: PgFixture, pg_password: str) -> None:
    """A vector(16) column audited with 384-dimensional queries: info() says 16 (the audit's shape check compares
    it with the contract) and a search is refused naming the column, not a driver error."""
    src = _open(pg.uri("dim16"))
    assert src.info().dim == 16
    with pytest.raises(
        IndexSourceError, match=r"'dim16.embedding' holds 16-dimensional vectors but the queries have 384"
    ):
        src.search(pg.tables.faithful[:2], 5, exact=False)


def test_a_column_that_mixes_dimensions_names_the_row(pg: PgFixture, pg_password: str) -> None:
    src = _open(pg.uri("mixed", metric="cosine"))
    with pytest.raises(IndexSourceError, match=r"row with id 'd0005' holds a 3-dimensional vector .*'mixed.embedding'"):
        list(src.iter_vectors(10))


def test_missing_uri_parts_and_a_password_in_the_uri(pg: PgFixture) -> None:
    port = pg.server.port
    with pytest.raises(IndexSourceError, match=r"missing vector=") as err:
        _open(f"postgresql://postgres@127.0.0.1:{port}/audit?table=faithful_hnsw&id=id")
    with pytest.raises(IndexSourceError, match="the URI carries a password") as err:
        _open(f"postgresql://postgres:{PASSWORD}@127.0.0.1:{port}/audit?table=t&id=id&vector=embedding")
    assert PASSWORD not in str(err.value)
    with pytest.raises(IndexSourceError, match="name the database"):
        _open(f"postgresql://postgres@127.0.0.1:{port}?table=t&id=id&vector=embedding")


def test_connection_refused_names_host_and_port(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    with pytest.raises(IndexSourceError) as err:
        _open(f"postgresql://postgres@127.0.0.1:{port}/audit?table=t&id=id&vector=embedding")
    assert f"no PostgreSQL server answers at 127.0.0.1:{port}: start it, or fix the host and port" in str(err.value)
    assert PASSWORD not in str(err.value)


@pytest.mark.parametrize("wrong", ["wrong-horse-battery", "postgres"])  # the second also appears in the server's text
def test_a_wrong_password_is_refused_and_never_echoed(
    pg: PgFixture, monkeypatch: pytest.MonkeyPatch, wrong: str
) -> None:
    monkeypatch.setenv("PGPASSWORD", wrong)
    with pytest.raises(IndexSourceError) as err:
        _open(pg.uri("faithful_hnsw"))
    message = str(err.value)
    assert "refused the password" in message and "export the right password in $PGPASSWORD" in message
    assert wrong not in message and wrong not in repr(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__  # the driver's error is not chained


def test_no_password_names_the_variable_to_set(pg: PgFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.delenv("AUDIT_PG_PASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", "/nonexistent")
    with pytest.raises(IndexSourceError, match=r"asks for a password and \$AUDIT_PG_PASSWORD is not set"):
        _open(pg.uri("faithful_hnsw"), password_env="AUDIT_PG_PASSWORD")
    monkeypatch.setenv("AUDIT_PG_PASSWORD", PASSWORD)
    _open(pg.uri("faithful_hnsw"), password_env="AUDIT_PG_PASSWORD").close()


def test_a_missing_client_is_a_usage_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import evalsuite.base.extras as extras

    real = extras.find_spec
    monkeypatch.setattr(extras, "find_spec", lambda name: None if name == "psycopg" else real(name))
    with pytest.raises(MissingExtra, match=r"pip install 'evalsuite\[pgvector\]'"):
        _open("postgresql://u@127.0.0.1:1/db?table=t&id=id&vector=v")
