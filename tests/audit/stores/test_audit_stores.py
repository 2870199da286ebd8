"""`evalsuite audit` end to end over a real pgvector server and real LanceDB tables holding the honest ingest:
a faithful table passes, each fault is named by its class, bad input exits 2 with the table named and the
password never printed, and nothing is written under --out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalsuite.cli import main

from ..conftest import ALL_PASS, DOC_PREFIX, Ingest, audit_argv, written
from ..pg import PASSWORD
from .conftest import SHIFT_BATCH, LanceFixture, PgFixture


def audit(ingest: Ingest, uri: str, out: Path, *extra: str) -> tuple[int, dict[str, dict[str, Any]], dict[str, Any]]:
    code = main(audit_argv(ingest.dataset, uri, out, *extra))
    data = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    return code, {v["check"]: v for v in data["index"]["verdicts"]}, data


# -- pgvector ---------------------------------------------------------------------------------------------
@pytest.mark.xdist_group("pgvector")
def test_pgvector_faithful_hnsw_table_passes_and_its_search_is_reported(
    ingest: Ingest, pg: PgFixture, pg_password: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, v, data = audit(ingest, pg.uri("faithful_hnsw"), tmp_path / "out")
    out = capsys.readouterr().out
    assert code == 0, out
    assert {k: x["status"] for k, x in v.items()} == ALL_PASS
    assert v["ann_recall"]["details"]["recall"] == 1.0
    for m, row in v["retrieval"]["details"]["metrics"].items():
        assert row["delta"] == 0.0, m
    params = v["retrieval"]["details"]["search"]["params"]
    assert params["ef_search"] == 40 and params["opclass"] == "vector_cosine_ops"
    assert PASSWORD not in out and PASSWORD not in json.dumps(data)
    assert PASSWORD not in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


@pytest.mark.xdist_group("pgvector")
def test_pgvector_shifted_batch_is_a_mapping_fault_with_its_ids(
    ingest: Ingest, pg: PgFixture, pg_password: str, tmp_path: Path
) -> None:
    code, v, _ = audit(ingest, pg.uri("shifted"), tmp_path / "out")
    lo, hi = SHIFT_BATCH
    assert code == 1 and v["fidelity"]["status"] == "FAIL"
    cause = v["fidelity"]["details"]["diagnosis"]["causes"][0]
    assert (cause["class"], cause["kind"], cause["offset"]) == ("mapping", "shift", 1)
    assert cause["runs"] == [[lo, hi - 1]] and cause["ids"][0] == ingest.ids[lo]
    assert cause["holds_vector_of"][0] == ingest.ids[lo + 1]


@pytest.mark.xdist_group("pgvector")
def test_pgvector_unnormalized_rows_in_an_ip_index_are_named(
    ingest: Ingest, pg: PgFixture, pg_password: str, tmp_path: Path
) -> None:
    code, v, _ = audit(ingest, pg.uri("unnormalized"), tmp_path / "out")
    n = len(pg.tables.unnormalized_rows)
    assert code == 1 and v["norms"]["status"] == "FAIL"
    assert v["norms"]["details"]["n_off_one"] == n
    assert "an inner-product index over unnormalized vectors" in v["norms"]["message"]
    assert v["fidelity"]["status"] == "PASS"


@pytest.mark.xdist_group("pgvector")
def test_pgvector_ivfflat_with_probes_one_fails_ann_recall_with_its_settings(
    ingest: Ingest, pg: PgFixture, pg_password: str, tmp_path: Path
) -> None:
    code, v, _ = audit(ingest, pg.uri("collapse_ivf"), tmp_path / "out")
    assert code == 1 and v["ann_recall"]["status"] == "FAIL"
    assert v["ann_recall"]["details"]["recall"] < 0.9
    params = v["ann_recall"]["details"]["params"]
    assert (params["lists"], params["probes"]) == (40, 1)
    assert "probes=1" in v["ann_recall"]["message"]
    assert v["fidelity"]["status"] == "PASS" and v["ids"]["status"] == "PASS"


@pytest.mark.xdist_group("pgvector")
@pytest.mark.parametrize(
    ("table", "params", "env", "expected"),
    [
        ("nope", {}, PASSWORD, "table 'nope' does not exist"),
        ("faithful_hnsw", {"vector": "emb"}, PASSWORD, "column 'faithful_hnsw.emb' (given as vector=) does not exist"),
        ("empty", {}, PASSWORD, "table 'empty' has no rows"),
        ("faithful_hnsw", {}, "postgres", "refused the password for user ***"),  # the wrong password is the user's name
        ("int_ids", {}, PASSWORD, "every stored id is an integer"),
    ],
)
def test_pgvector_bad_input_exits_2_naming_it_and_writes_nothing(
    ingest: Ingest,
    pg: PgFixture,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    table: str,
    params: dict[str, str],
    env: str,
    expected: str,
) -> None:
    monkeypatch.setenv("PGPASSWORD", env)
    out = tmp_path / "out"
    code = main(["audit", "--index", pg.uri(table, **params), "--dataset", str(ingest.dataset), "--out", str(out)])
    cap = capsys.readouterr()
    assert code == 2, cap.out + cap.err
    assert expected in cap.err + cap.out
    assert PASSWORD not in cap.out + cap.err and (env == PASSWORD or env not in cap.out + cap.err)
    assert written(out) == []


# -- LanceDB ----------------------------------------------------------------------------------------------
def test_lancedb_faithful_table_passes(ingest: Ingest, lance: LanceFixture, tmp_path: Path) -> None:
    code, v, _ = audit(ingest, lance.uri("faithful", nprobes="4"), tmp_path / "out")
    assert code == 0
    assert {k: x["status"] for k, x in v.items()} == ALL_PASS
    assert v["retrieval"]["details"]["search"]["params"]["nprobes"] == 4


def test_lancedb_shifted_batch_is_a_mapping_fault(ingest: Ingest, lance: LanceFixture, tmp_path: Path) -> None:
    code, v, _ = audit(ingest, lance.uri("shifted", nprobes="4"), tmp_path / "out")
    lo, hi = SHIFT_BATCH
    cause = v["fidelity"]["details"]["diagnosis"]["causes"][0]
    assert code == 1 and (cause["class"], cause["kind"], cause["runs"]) == ("mapping", "shift", [[lo, hi - 1]])


def test_lancedb_ivf_pq_without_refine_fails_ann_recall(ingest: Ingest, lance: LanceFixture, tmp_path: Path) -> None:
    code, v, _ = audit(ingest, lance.uri("pq", nprobes="1"), tmp_path / "out")
    assert code == 1 and v["ann_recall"]["status"] == "FAIL"
    assert v["ann_recall"]["details"]["params"]["nprobes"] == 1
    assert v["fidelity"]["status"] == "PASS" and v["ids"]["status"] == "PASS"


def test_lancedb_unnormalized_rows_in_a_dot_index_are_named(
    ingest: Ingest, lance: LanceFixture, tmp_path: Path
) -> None:
    code, v, _ = audit(ingest, lance.uri("unnormalized", nprobes="4"), tmp_path / "out")
    assert code == 1 and v["norms"]["status"] == "FAIL"
    assert "an inner-product index over unnormalized vectors" in v["norms"]["message"]


@pytest.mark.parametrize(
    ("table", "expected"),
    [("nope", "table 'nope' does not exist"), ("wrong_type", "wrong_type.vector is of type string")],
)
def test_lancedb_bad_input_exits_2_and_writes_nothing(
    ingest: Ingest, lance: LanceFixture, tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, expected: str
) -> None:
    out = tmp_path / "out"
    code = main(["audit", "--index", lance.uri(table), "--dataset", str(ingest.dataset), "--out", str(out)])
    cap = capsys.readouterr()
    assert code == 2 and expected in cap.err + cap.out
    assert written(out) == []


# -- the pytest items -----------------------------------------------------------------------------------------
@pytest.mark.xdist_group("pgvector")
def test_pytest_items_over_a_pgvector_table(
    ingest: Ingest, pg: PgFixture, pg_password: str, pytester: pytest.Pytester
) -> None:
    """`pytest --index 'postgresql://...'`: one item per check; the shifted batch fails fidelity with its cause in
    the JUnit properties (and retrieval, a fifth of the chunks holding a neighbour's vector), the password nowhere in
    the output or the JUnit file."""
    import xml.etree.ElementTree as ET

    from evalsuite.model import bundled_model_dir, directory_digest

    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(
        "-p", "no:randomly", "-p", "no:cacheprovider",
        "--model-rev", directory_digest(bundled_model_dir()),
        "--dataset", str(ingest.dataset), "--doc-prefix", DOC_PREFIX,
        "--audit-index", pg.uri("shifted"),
        f"--junitxml={junit}", "-k", "audit",
    )  # fmt: skip
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 2 and outcomes.get("passed") == 5 and outcomes.get("skipped") == 1, outcomes
    props = {
        p.get("name"): p.get("value")
        for case in ET.parse(junit).getroot().iter("testcase")
        for p in case.iter("property")
    }
    assert props["audit:fidelity"] == props["audit:retrieval"] == "FAIL" and props["audit:ann_recall"] == "PASS"
    assert props["audit:collisions"] == "PASS"  # a shifted batch moves vectors, it does not make two rows equal
    assert props["audit:fidelity:cause1"].startswith("mapping fault: ids shifted by +1")
    assert PASSWORD not in "\n".join(result.outlines) and PASSWORD not in junit.read_text(encoding="utf-8")
