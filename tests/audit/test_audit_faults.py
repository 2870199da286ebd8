"""`evalsuite audit` over FAISS files from an honest ingest pipeline, and copies with one real ingest fault each:
a faithful index passes with every delta 0; each fault is named by its class with its share (and its ids)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalsuite.cli import main

from .conftest import ALL_PASS, BATCH, DOC_PREFIX, Ingest, audit_argv


def audit(ingest: Ingest, name: str, index: Path, ids: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    code = main(audit_argv(ingest.dataset, f"faiss:{index}", out / name, "--ids", str(ids), *extra))
    data = json.loads((out / name / "audit.json").read_text(encoding="utf-8"))
    return code, data, (out / name / "report.md").read_text(encoding="utf-8")


def verdicts(data: dict[str, Any], side: str = "index") -> dict[str, dict[str, Any]]:
    return {v["check"]: v for v in data[side]["verdicts"]}


def test_faithful_index_passes_with_every_delta_zero(
    ingest: Ingest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index, ids = ingest.write("faithful", ingest.vectors)
    code, data, report = audit(ingest, "faithful", index, ids, tmp_path)
    v = verdicts(data)
    assert code == 0, capsys.readouterr().out
    assert data["schema_version"] == 1 and data["passed"] is True
    assert {k: x["status"] for k, x in v.items()} == ALL_PASS
    assert v["fidelity"]["details"]["sampled"] == len(ingest.ids)  # 1% at 0.99 needs 459 rows: every one of 160
    for m, row in v["retrieval"]["details"]["metrics"].items():
        assert row["delta"] == 0.0 and row["ci_low"] == 0.0 and row["ci_high"] == 0.0, m
    assert v["ann_recall"]["details"]["recall"] == 1.0
    assert report.startswith("# Index audit: PASS")


def test_shift_by_one_inside_one_batch_is_a_mapping_fault_with_its_ids(ingest: Ingest, tmp_path: Path) -> None:
    # the ingest zipped batch 2's ids with its vectors one off: row r holds row r+1's vector (the last row the first's)
    v = ingest.vectors.copy()
    lo, hi = BATCH, 2 * BATCH
    v[lo:hi] = np.roll(ingest.vectors[lo:hi], -1, axis=0)
    index, ids = ingest.write("shift", v)
    code, data, report = audit(ingest, "shift", index, ids, tmp_path)
    f = verdicts(data)["fidelity"]
    assert code == 1 and f["status"] == "FAIL"
    cause = f["details"]["diagnosis"]["causes"][0]
    assert cause["class"] == "mapping" and cause["kind"] == "shift" and cause["offset"] == 1
    assert cause["runs"] == [[lo, hi - 1]]
    assert cause["ids"][0] == ingest.ids[lo] and cause["holds_vector_of"][0] == ingest.ids[lo + 1]
    assert cause["sampled"] == BATCH and cause["sample_size"] == len(ingest.ids)
    assert (
        f"ids shifted by +1 inside 1 run of {BATCH} consecutive rows, first at chunk {ingest.ids[lo]}" in f["message"]
    )
    assert "20.0% of vectors (32 of 160 sampled" in f["message"]
    assert "mapping fault" in report.split("## ")[0]  # report.md leads with the diagnosis


def test_permutation_inside_a_batch_is_named(ingest: Ingest, tmp_path: Path) -> None:
    v = ingest.vectors.copy()
    lo = 2 * BATCH
    perm = np.random.default_rng(7).permutation(BATCH)
    while (perm == np.arange(BATCH)).any():  # every row misplaced
        perm = np.random.default_rng(int(perm[0]) + 11).permutation(BATCH)
    v[lo : lo + BATCH] = ingest.vectors[lo : lo + BATCH][perm]
    index, ids = ingest.write("perm", v)
    code, data, _ = audit(ingest, "perm", index, ids, tmp_path)
    cause = verdicts(data)["fidelity"]["details"]["diagnosis"]["causes"][0]
    assert code == 1
    assert cause["class"] == "mapping" and cause["kind"] == "permutation"
    assert cause["runs"] == [[lo, lo + BATCH - 1]] and cause["sampled"] == BATCH
    got = dict(zip(cause["ids"], cause["holds_vector_of"], strict=True))
    assert got == {ingest.ids[lo + i]: ingest.ids[lo + int(perm[i])] for i in range(BATCH)}


def test_a_tenth_from_a_cls_pooling_copy_is_stale_with_its_share(ingest: Ingest, tmp_path: Path) -> None:
    rows = list(range(3, len(ingest.ids), 10))  # 16 of 160
    v = ingest.vectors.copy()
    v[rows] = ingest.variant({"doc_prefix": DOC_PREFIX, "pooling": "cls", "dataset": str(ingest.dataset)}, rows)
    index, ids = ingest.write("cls", v)
    code, data, report = audit(ingest, "cls", index, ids, tmp_path)
    f = verdicts(data)["fidelity"]
    assert code == 1 and f["status"] == "FAIL"
    d = f["details"]["diagnosis"]
    assert d["unexplained"] == [] and len(d["causes"]) == 1
    stale = d["causes"][0]
    assert stale["class"] == "stale" and "pooling=cls" in stale["alternative"]
    assert stale["count"] == 16 and stale["sample_size"] == 160 and stale["share"] == 0.1
    assert sorted(stale["ids"]) == sorted(ingest.ids[r] for r in rows)
    lo, hi = stale["ci95"]
    assert lo < 0.1 < hi
    assert "10.0% of vectors (16 of 160 sampled, 95% CI" in f["message"] and "pooling=cls" in f["message"]
    assert {w["id"] for w in f["details"]["worst"][:5]} <= {ingest.ids[r] for r in rows}
    assert "pooling=cls" in report.split("## ")[0]


def test_missing_document_prefix_on_a_share_is_stale(ingest: Ingest, tmp_path: Path) -> None:
    rows = list(range(0, len(ingest.ids), 8))  # 20 of 160
    v = ingest.vectors.copy()
    v[rows] = ingest.variant({"dataset": str(ingest.dataset)}, rows)
    index, ids = ingest.write("noprefix", v)
    code, data, _ = audit(ingest, "noprefix", index, ids, tmp_path)
    d = verdicts(data)["fidelity"]["details"]["diagnosis"]
    assert code == 1 and d["unexplained"] == []
    (stale,) = d["causes"]
    assert stale["class"] == "stale" and stale["count"] == 20 and stale["share"] == 0.125
    assert "prefix" in stale["alternative"] or any("prefix" in c for c in stale["causes"]), stale


def test_a_retried_batch_appended_twice_is_named_in_ids(ingest: Ingest, tmp_path: Path) -> None:
    lo, hi = BATCH, 2 * BATCH
    v = np.vstack([ingest.vectors, ingest.vectors[lo:hi]])
    index, ids = ingest.write("dup", v, ingest.ids + ingest.ids[lo:hi])
    code, data, _ = audit(ingest, "dup", index, ids, tmp_path)
    x = verdicts(data)
    assert code == 1 and x["ids"]["status"] == "FAIL" and x["fidelity"]["status"] == "PASS"
    assert x["ids"]["details"]["n_duplicated"] == BATCH and x["ids"]["details"]["count"] == len(ingest.ids) + BATCH
    n = len(ingest.ids)
    assert f"rows {lo}–{hi - 1} stored again at {n}–{n + BATCH - 1}, a batch appended twice" in x["ids"]["message"]
    assert x["retrieval"]["status"] == "PASS"  # a duplicate counts once in a ranking: the retrieval is unharmed


def test_unnormalized_subset_in_an_inner_product_index_is_named(ingest: Ingest, tmp_path: Path) -> None:
    rows = list(range(5, len(ingest.ids), 10))  # 16 of 160
    v = ingest.vectors.copy()
    v[rows] *= np.linspace(1.5, 4.0, len(rows), dtype=np.float32)[:, None]
    index, ids = ingest.write("unnorm", v)
    code, data, _ = audit(ingest, "unnorm", index, ids, tmp_path)
    x = verdicts(data)
    assert code == 1 and x["norms"]["status"] == "FAIL"
    assert x["norms"]["details"]["n_off_one"] == 16 and x["norms"]["details"]["share_off_one"] == 0.1
    assert "an inner-product index over unnormalized vectors" in x["norms"]["message"]
    assert "16 of 160 vectors (10.0%)" in x["norms"]["message"]
    assert x["fidelity"]["status"] == "PASS"  # the directions are right: only the lengths are wrong


def test_ivf_with_many_lists_and_nprobe_one_fails_ann_recall_and_names_its_parameters(
    ingest: Ingest, tmp_path: Path
) -> None:
    import faiss

    def ivf(d: int) -> object:
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, 40, faiss.METRIC_INNER_PRODUCT)
        index.nprobe = 1
        return index

    index, ids = ingest.write("ivf", ingest.vectors, index=ivf)
    code, data, _ = audit(ingest, "ivf", index, ids, tmp_path)
    x = verdicts(data)
    assert code == 1 and x["ann_recall"]["status"] == "FAIL"
    assert x["ann_recall"]["details"]["params"] == {"nlist": 40, "nprobe": 1}
    assert "nprobe=1" in x["ann_recall"]["message"] and x["ann_recall"]["details"]["recall"] < 0.9
    assert x["fidelity"]["status"] == "PASS" and x["ids"]["status"] == "PASS"
    # its exact search over the same vectors is the reference's: the loss is the approximate search's alone
    assert x["retrieval"]["details"]["search"]["params"] == {"nlist": 40, "nprobe": 1}


def test_one_stale_row_of_160_fails_fidelity_the_worst_case_decides(ingest: Ingest, tmp_path: Path) -> None:
    # a median (or a mean) over 160 rows would pass this index: only the worst row decides
    row = 77
    v = ingest.vectors.copy()
    v[[row]] = ingest.variant({"doc_prefix": DOC_PREFIX, "pooling": "cls", "dataset": str(ingest.dataset)}, [row])
    index, ids = ingest.write("one", v)
    code, data, _ = audit(ingest, "one", index, ids, tmp_path)
    f = verdicts(data)["fidelity"]
    assert code == 1 and f["status"] == "FAIL" and f["details"]["bad"] == 1
    assert f["details"]["worst"][0]["id"] == ingest.ids[row] and f["details"]["worst"][0]["row"] == row
    assert f["details"]["worst"][1]["cosine"] >= 0.999  # every other row is faithful
    assert "0.6% of vectors (1 of 160 sampled" in f["message"] and "pooling=cls" in f["message"]


def test_a_sample_states_its_detection_power(ingest: Ingest, tmp_path: Path) -> None:
    index, ids = ingest.write("faithful", ingest.vectors)
    code, data, report = audit(ingest, "sampled", index, ids, tmp_path, "--audit-detect", "0.05", "--audit-seed", "3")
    f = verdicts(data)["fidelity"]
    assert code == 0 and f["details"]["sampled"] == 90 and f["details"]["all"] is False
    assert (
        "a bad share >= 5% of the 160 stored vectors would have been found with probability 0.9901 >= 0.99"
        in (f["message"])
    )
    assert "Detection power: a bad share >= 5%" in report


def test_cutover_compares_the_new_index_with_the_one_in_production(ingest: Ingest, tmp_path: Path) -> None:
    old, old_ids = ingest.write("faithful", ingest.vectors)
    v = ingest.vectors.copy()
    v[BATCH : 2 * BATCH] = np.roll(ingest.vectors[BATCH : 2 * BATCH], -1, axis=0)
    new, new_ids = ingest.write("shift", v)
    extra = ("--baseline-index", f"faiss:{old}", "--baseline-ids", str(old_ids))
    code, data, report = audit(ingest, "cutover", new, new_ids, tmp_path, *extra)
    assert code == 1 and data["baseline"]["passed"] is True and data["index"]["passed"] is False
    cut = data["cutover"]
    assert cut["status"] == "FAIL" and cut["details"]["metrics"]["ndcg@10"]["decision"] == "fail"
    assert cut["details"]["metrics"]["ndcg@10"]["ci_high"] < -0.01
    assert "## Cutover" in report
    # the rollback pair: the faithful index against itself is non-inferior with every delta 0
    code, data, _ = audit(ingest, "same", old, old_ids, tmp_path, *extra)
    assert code == 0 and data["cutover"]["status"] == "PASS"
    assert all(r["delta"] == 0.0 for r in data["cutover"]["details"]["metrics"].values())


def test_the_manifest_of_the_index_against_the_contract(ingest: Ingest, tmp_path: Path) -> None:
    run_out = tmp_path / "run"
    assert main(["run", "--dataset", str(ingest.dataset), "--doc-prefix", DOC_PREFIX, "--out", str(run_out)]) == 0
    manifest = run_out / "manifest.json"
    index, ids = ingest.write("faithful", ingest.vectors)
    code, data, _ = audit(ingest, "manifest-ok", index, ids, tmp_path, "--manifest", str(manifest))
    assert code == 0 and verdicts(data)["manifest"]["status"] == "PASS"
    m = json.loads(manifest.read_text(encoding="utf-8"))
    m["contract"]["pooling"] = "cls"  # the index was declared as made with another pooling
    other = tmp_path / "other.json"
    other.write_text(json.dumps(m), encoding="utf-8")
    code, data, _ = audit(ingest, "manifest-bad", index, ids, tmp_path, "--manifest", str(other))
    v = verdicts(data)["manifest"]
    assert code == 1 and v["status"] == "FAIL" and "pooling: manifest 'cls', audit 'mean'" in v["message"]


def test_retrieval_gates_in_the_release_gate_syntax(ingest: Ingest, tmp_path: Path) -> None:
    v = ingest.vectors.copy()
    v[BATCH : 2 * BATCH] = np.roll(ingest.vectors[BATCH : 2 * BATCH], -1, axis=0)
    index, ids = ingest.write("shift", v)
    gates = ("--audit-gate", "recall@100:max_drop=0.5", "--audit-gate", "ndcg@10>=0.99")
    code, data, report = audit(ingest, "gates", index, ids, tmp_path, *gates)
    r = verdicts(data)["retrieval"]
    assert code == 1 and r["status"] == "FAIL"
    assert r["details"]["gates"]["recall@100:max_drop=0.5"]["decision"] == "pass"
    assert r["details"]["gates"]["ndcg@10>=0.99"]["decision"] == "fail"
    assert "ndcg@10>=0.99 FAIL" in r["message"] and "| ndcg@10>=0.99 |" in report
    assert main(["audit", "--index", f"faiss:{index}", "--audit-gate", "ndcg@10:bogus=1"]) == 2


def test_an_index_cut_to_fewer_dimensions_fails_shape_and_is_named_a_matryoshka_cut(
    ingest: Ingest, tmp_path: Path
) -> None:
    cut = ingest.vectors[:, :256] / np.linalg.norm(ingest.vectors[:, :256], axis=1, keepdims=True)
    index, ids = ingest.write("cut", cut)
    code, data, _ = audit(ingest, "cut", index, ids, tmp_path)
    x = verdicts(data)
    assert (
        code == 1 and x["shape"]["status"] == "FAIL" and "dimension 256, the contract's is 384" in x["shape"]["message"]
    )
    assert x["retrieval"]["status"] == "SKIP" and x["ann_recall"]["status"] == "SKIP"
    (stale,) = x["fidelity"]["details"]["diagnosis"]["causes"]
    assert stale["class"] == "stale" and stale["count"] == len(ingest.ids) and "256" in stale["alternative"], stale


def test_chunks_of_different_texts_with_one_vector_are_named_collisions(ingest: Ingest, tmp_path: Path) -> None:
    # an engine that collapsed three inputs to one vector (Ollama#13942: every all-uppercase input): rows 5 and 77
    # hold row 40's vector
    v = ingest.vectors.copy()
    v[5] = v[77] = v[40]
    index, ids = ingest.write("collide", v)
    code, data, _ = audit(ingest, "collide", index, ids, tmp_path)
    c = verdicts(data)["collisions"]
    assert code == 1 and c["status"] == "FAIL", c["message"]
    [group] = c["details"]["collisions"]
    assert sorted(x["id"] for x in group) == sorted(ingest.ids[r] for r in (5, 40, 77))
    assert (
        c["details"]["groups"] == 1
        and "1 group(s) of chunks with different texts share one stored vector" in (c["message"])
    )
    assert ingest.ids[5] in c["message"]
