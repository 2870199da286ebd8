"""The LanceDB store against real LanceDB tables in a directory (made once per session).

Each test names the one-line bug it catches."""

from __future__ import annotations

import numpy as np
import pytest

from evalsuite.audit.source import IndexSource, SourceOptions, TextSource
from evalsuite.audit.stores import open_source
from evalsuite.base.errors import IndexSourceError, MissingExtra

from .conftest import SHIFT_BATCH, LanceFixture
from .oracle import assert_same_ranking, between_chunks, brute_force, recall


def _open(uri: str) -> IndexSource:
    return open_source(uri, SourceOptions())


def test_every_row_streams_once_in_bounded_arrow_batches(lance: LanceFixture) -> None:
    """Bugs: the last short batch dropped, a reader's larger batch passed on whole (unbounded), rows reordered."""
    src = _open(lance.uri("shifted"))
    ids: list[str] = []
    vectors = []
    for batch_ids, batch in src.iter_vectors(50):
        assert len(batch_ids) == len(batch) <= 50
        assert batch.dtype == np.float32 and batch.shape[1] == 384
        ids += batch_ids
        vectors.append(batch)
    t = lance.tables
    assert ids == t.ids
    np.testing.assert_array_equal(np.vstack(vectors), t.shifted)
    start = SHIFT_BATCH[0]
    np.testing.assert_array_equal(np.vstack(vectors)[start], t.faithful[start + 1])
    src.close()


def test_fetch_gives_every_stored_vector_of_an_id_and_omits_ids_not_stored(lance: LanceFixture) -> None:
    """Bugs: a duplicated id collapsed to one vector, a quote in an id breaking the filter."""
    src = _open(lance.uri("dup_batch", metric="cosine"))
    t = lance.tables
    got = src.fetch([t.ids[40], t.ids[100], "no-such-chunk", "it's", t.ids[40]])
    assert set(got) == {t.ids[40], t.ids[100]}
    assert len(got[t.ids[40]]) == 2 and len(got[t.ids[100]]) == 1
    for vec in got[t.ids[40]]:
        np.testing.assert_array_equal(vec, t.faithful[40])
    assert src.info().count == len(t.ids) + 32


@pytest.mark.parametrize(
    ("table", "params", "metric", "scale"),
    [("faithful", {}, "cosine", 1.0), ("unnormalized", {}, "ip", None), ("l2", {"metric": "l2"}, "l2", 3.0)],
)
def test_exact_search_equals_numpy_brute_force(
    lance: LanceFixture, table: str, params: dict[str, str], metric: str, scale: float | None
) -> None:
    """Bugs: bypass_vector_index() without the index's distance type (LanceDB's flat search defaults to L2),
    1 - distance for l2, the dot distance (1 - x·y) read as the score."""
    src = _open(lance.uri(table, **params))
    t = lance.tables
    assert src.info().metric == metric
    stored = t.unnormalized if scale is None else t.faithful * scale
    queries = between_chunks(t.faithful, 12)
    assert_same_ranking(src.search(queries, 10, exact=True), brute_force(stored, t.ids, queries, 10, metric))


def test_info_reads_the_index_and_the_query_parameters_as_deployed(lance: LanceFixture) -> None:
    """Bugs: the metric guessed instead of read from the index, LanceDB's default probes not reported."""
    info = _open(lance.uri("pq")).info()
    assert (info.store, info.count, info.dim, info.metric, info.index_type) == (
        "lancedb",
        len(lance.tables.ids),
        384,
        "cosine",
        "IVF_PQ",
    )
    p = info.search_params
    assert p["plan"] == "ANN index" and (p["num_bits"], p["num_sub_vectors"]) == (4, 2)
    assert p["nprobes"] == 20 and "unindexed_rows" not in p  # LanceDB's default probes, read from its plan
    tuned = _open(lance.uri("pq", nprobes="1", refine="5")).info().search_params
    assert (tuned["nprobes"], tuned["refine_factor"]) == (1, 5)
    flat = _open(lance.uri("l2", metric="l2")).info()
    assert (flat.index_type, flat.search_params["plan"]) == ("flat", "flat scan")


def test_an_index_that_indexed_no_row_is_reported_as_searching_flat(lance: LanceFixture) -> None:
    """An 8-bit IVF-PQ created over 160 rows: LanceDB keeps the index but indexes none of them (PQ needs 256 to
    train), so every query scans flat. Bug: the index's existence reported as "ANN" without looking at the plan."""
    info = _open(lance.uri("pq_untrained")).info()
    assert info.index_type == "IVF_PQ"
    assert info.search_params["unindexed_rows"] == len(lance.tables.ids)
    assert info.search_params["plan"] == "flat scan"


def test_an_ivf_pq_with_few_probes_and_no_refine_misses_what_the_exact_search_finds(lance: LanceFixture) -> None:
    """IVF-PQ with coarse codes searched with nprobes=1 and no refine step, as deployed: the PQ distances lose
    much of the exact top 10 (measured 0.55-0.65 recall@10); the same table with a refine step (re-ranked on the
    stored vectors) finds it. Bugs: nprobes/refine from the URI not applied, the ANN path running the exact query."""
    t = lance.tables
    queries = between_chunks(t.faithful, 20)
    few = _open(lance.uri("pq", nprobes="1"))
    exact = few.search(queries, 10, exact=True)
    assert_same_ranking(exact, brute_force(t.faithful, t.ids, queries, 10, "cosine"))
    assert recall(few.search(queries, 10, exact=False), exact) < 0.75
    refined = _open(lance.uri("pq", nprobes="1", refine="20"))
    assert recall(refined.search(queries, 10, exact=False), exact) >= 0.95
    faithful = _open(lance.uri("faithful", nprobes="4"))
    assert recall(faithful.search(queries, 10, exact=False), exact) == 1.0


def test_texts_come_from_the_text_column_only_when_one_is_named(lance: LanceFixture) -> None:
    t = lance.tables
    with_text = _open(lance.uri("faithful", text="body"))
    assert isinstance(with_text, TextSource)
    assert with_text.texts([t.ids[0], t.ids[-1], "nope"]) == {t.ids[0]: t.texts[0], t.ids[-1]: t.texts[-1]}
    assert not isinstance(_open(lance.uri("faithful")), TextSource)


def test_integer_ids_are_read_as_text(lance: LanceFixture) -> None:
    src = _open(lance.uri("int_ids", metric="cosine"))
    first_ids, _ = next(iter(src.iter_vectors(5)))
    assert first_ids == ["1", "2", "3", "4", "5"]
    got = src.fetch(["12", lance.tables.ids[11], "-3"])
    assert list(got) == ["12"]
    np.testing.assert_array_equal(got["12"][0], lance.tables.faithful[11])
    assert src.search(lance.tables.faithful[11:12], 1, exact=True)[0][0][0] == "12"


@pytest.mark.parametrize(
    ("table", "params", "expected"),
    [
        ("nope", {}, ["table 'nope' does not exist", "faithful", "check table="]),
        ("faithful", {"id": "chunk"}, ["column faithful.chunk (given as id=) does not exist", "body"]),
        ("faithful", {"vector": "emb"}, ["column faithful.emb (given as vector=) does not exist"]),
        ("faithful", {"text": "content"}, ["column faithful.content (given as text=) does not exist"]),
        ("wrong_type", {}, ["wrong_type.vector is of type string", "give vector= the column"]),
        ("empty", {"metric": "cosine"}, ["table 'empty' has no rows", "point table= at the table"]),
        ("l2", {}, ["has no vector index", "give metric=cosine"]),
        ("faithful", {"metric": "dot"}, ["metric='dot'", "metric=ip"]),
        ("faithful", {"nprobes": "0"}, ["nprobes must be at least 1"]),
        ("faithful", {"tabel": "x"}, ["unknown parameter 'tabel'", "lancedb.connect's own are read_consistency"]),
        ("faithful", {"read_consistency_interval": "soon"}, ["read_consistency_interval='soon'"]),
        ("faithful", {"api_key": "sk-not-echoed"}, ["the URI carries api_key=, a secret", "api_key=***"]),
        # the secret after another error's key, percent-encoded: the URI shown has it masked all the same
        ("faithful", {"tabel": "x", "api%5Fkey": "sk-not-echoed"}, ["unknown parameter 'tabel'", "api%5Fkey=***"]),
    ],
)
def test_bad_table_or_column_is_a_typed_error_naming_it(
    lance: LanceFixture, table: str, params: dict[str, str], expected: list[str]
) -> None:
    with pytest.raises(IndexSourceError) as err:
        _open(lance.uri(table, **params))
    for text in expected:
        assert text in str(err.value)
    assert "sk-not-echoed" not in str(err.value)


def test_a_vector_column_of_another_dimension_is_named_with_the_remedy(lance: LanceFixture) -> None:
    src = _open(lance.uri("dim16", metric="cosine"))
    assert src.info().dim == 16
    with pytest.raises(IndexSourceError, match=r"dim16.vector holds 16-dimensional vectors but the queries have 384"):
        src.search(lance.tables.faithful[:2], 5, exact=True)


def test_a_missing_directory_and_a_missing_table_parameter(lance: LanceFixture) -> None:
    with pytest.raises(IndexSourceError, match="is not a directory; give the LanceDB directory"):
        _open(f"lancedb:{lance.path}/nope?table=faithful")
    with pytest.raises(IndexSourceError, match="missing table="):
        _open(f"lancedb:{lance.path}")


def test_a_missing_client_is_a_usage_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import evalsuite.base.extras as extras

    real = extras.find_spec
    monkeypatch.setattr(extras, "find_spec", lambda name: None if name == "lancedb" else real(name))
    with pytest.raises(MissingExtra, match=r"pip install 'evalsuite\[lancedb\]'"):
        _open("lancedb:/tmp/x?table=t")


def test_lancedb_connect_options_pass_through(lance: LanceFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's own option reaches lancedb.connect (bug: parsed, then dropped); evalsuite's keys do not."""
    import datetime

    import lancedb

    seen: list[dict] = []
    real = lancedb.connect

    def spy(uri, **kw):
        seen.append(kw)
        return real(uri, **kw)

    monkeypatch.setattr(lancedb, "connect", spy)
    src = _open(lance.uri("faithful", read_consistency_interval="2.5", nprobes="4"))
    assert src.info().count == len(lance.tables.ids)
    src.close()
    assert seen == [{"read_consistency_interval": datetime.timedelta(seconds=2.5)}]
