"""`evalsuite run --endpoint` against a real vLLM: the served run equals the local reference run, and a fleet
of vLLM and Infinity serving the same model name works as one encoder."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from evalsuite.cli import main

from .conftest import SERVED_NAME

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("vllm")]


def top10(path: Path) -> dict[str, set[str]]:
    ranked: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        qid, _, doc, rank, *_ = line.split()
        ranked[qid].append((int(rank), doc))
    return {q: {d for _, d in sorted(r)[:10]} for q, r in ranked.items()}


def overlap(a: Path, b: Path) -> float:
    ra, rb = top10(a), top10(b)
    assert ra.keys() == rb.keys()
    return sum(len(ra[q] & rb[q]) for q in ra) / sum(len(ra[q]) for q in ra)


def test_run_against_vllm_equals_the_local_run_and_a_mixed_fleet_is_one_encoder(
    vllm_servers, bundled_model_dir, infinity_launcher, minibeir_dir, tmp_path, capsys
):
    common = ["run", "--dataset", str(minibeir_dir), "--device", "cpu", "--cache-dir", str(tmp_path / "cache")]
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    assert main([*common, "--out", str(tmp_path / "served"), "--endpoint", vllm_servers.faithful]) == 0
    local = json.loads((tmp_path / "local" / "results.json").read_text())["metrics"]
    served = json.loads((tmp_path / "served" / "results.json").read_text())["metrics"]
    assert served.keys() == local.keys()
    for name, value in local.items():
        assert abs(served[name] - value) <= 0.002, (name, served[name], value)
    assert overlap(tmp_path / "local" / "run.trec", tmp_path / "served" / "run.trec") >= 0.99
    manifest = json.loads((tmp_path / "served" / "manifest.json").read_text())["encoder"]
    assert manifest["kind"] == "endpoint" and manifest["served_model"] == SERVED_NAME

    # Infinity serving the same model under the same name: with vLLM, one encoder of two URLs
    infinity = infinity_launcher(
        "vllm-fleet", {"infinity": (Path(bundled_model_dir), ["--served-model-name", SERVED_NAME])}
    )["infinity"]
    fleet_argv = ["--endpoint", vllm_servers.faithful, "--endpoint", infinity.url, "--endpoint-batch-size", "16"]
    assert main([*common, "--out", str(tmp_path / "fleet"), *fleet_argv, "--no-cache"]) == 0, capsys.readouterr()
    fleet = json.loads((tmp_path / "fleet" / "manifest.json").read_text())["encoder"]
    assert fleet["urls"] == [vllm_servers.faithful, infinity.url]
    assert fleet["batches"][vllm_servers.faithful] > 0 and fleet["batches"][infinity.url] > 0
    fleet_metrics = json.loads((tmp_path / "fleet" / "results.json").read_text())["metrics"]
    for name, value in local.items():
        assert abs(fleet_metrics[name] - value) <= 0.002, name
    assert overlap(tmp_path / "local" / "run.trec", tmp_path / "fleet" / "run.trec") >= 0.99


@pytest.mark.llamacpp
def test_a_fleet_of_vllm_and_llamacpp_is_stopped_by_the_member_check(
    vllm_servers, llamacpp_launcher, small_beir, tmp_path, capsys
):
    """vLLM normalizes, llama-cpp-python never does: one name, one model, two normalizations (issue 31). Under the
    raw-vector contract the member check stops the run before any batch is spread over them, naming both members and
    the norms; under the model's normalized contract the llama.cpp member is stopped by its own norm."""
    from evalsuite.base.errors import FleetMismatch
    from tests.llamacpp.conftest import F32, at_contract_length

    llamacpp = llamacpp_launcher("vllm-fleet", {"raw": (F32, at_contract_length())})["raw"].url
    argv = ["run", "--dataset", str(small_beir), "--device", "cpu", "--no-cache", "--out", str(tmp_path / "fleet")]
    argv += ["--endpoint", vllm_servers.faithful, "--endpoint", llamacpp]
    assert main([*argv, "--no-normalize"]) != 0
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert FleetMismatch.__name__ in text or "disagree" in text, text
    assert "norms off by" in text, text
    assert vllm_servers.faithful in text and llamacpp in text, text
    assert main(argv) != 0
    text = capsys.readouterr().err
    assert f"fleet member {llamacpp} failed" in text and "but the contract says normalized" in text, text
    assert not (tmp_path / "fleet" / "results.json").exists()
