"""`run --endpoint`, `verify`, `load` (a profile and a cutover from Infinity) and a fleet's member check against
real llama-cpp-python servers (see conftest).

The faithful llama.cpp server under the raw-vector contract (``--no-normalize``) gives the local run's metrics;
`verify` passes it against that contract's manifest and fails the default server against the model's own
(normalized) manifest, naming the normalization; a fleet of llama.cpp (raw vectors) and Infinity (always
normalized) stops at the member check, naming the norms.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.base.errors import FleetMismatch
from evalsuite.cli import main

from .conftest import SERVED_NAME

pytestmark = [pytest.mark.integration, pytest.mark.llamacpp, pytest.mark.xdist_group("llamacpp")]


@pytest.fixture(scope="module")
def infinity(bundled_model_dir, infinity_launcher):
    """An Infinity server of the bundled model under the llama.cpp servers' name (the cutover's old side)."""
    return infinity_launcher("llamacpp", {"old": (Path(bundled_model_dir), ["--served-model-name", SERVED_NAME])})[
        "old"
    ].url


def load_main(argv):
    from evalsuite.jobs import LOAD, add_job

    parser = argparse.ArgumentParser(prog="evalsuite")
    add_job(parser.add_subparsers(dest="command", required=True), LOAD)
    args = parser.parse_args(["load", *argv])
    return args.func(args)


def test_run_against_llamacpp_equals_the_local_run(llamacpp_servers, minibeir_dir, tmp_path, capsys):
    common = ["run", "--dataset", str(minibeir_dir), "--device", "cpu", "--no-normalize"]
    common += ["--cache-dir", str(tmp_path / "cache")]
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    rc = main([*common, "--out", str(tmp_path / "served"), "--endpoint", llamacpp_servers.faithful])
    assert rc == 0, capsys.readouterr()
    local = json.loads((tmp_path / "local" / "results.json").read_text())["metrics"]
    served = json.loads((tmp_path / "served" / "results.json").read_text())["metrics"]
    assert served.keys() == local.keys()
    for name, value in local.items():
        assert abs(served[name] - value) <= 0.002, (name, served[name], value)
    manifest = json.loads((tmp_path / "served" / "manifest.json").read_text())["encoder"]
    assert manifest["kind"] == "endpoint" and manifest["served_model"] == SERVED_NAME


def verify(manifest: Path, url: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "evalsuite", "verify", "--manifest", str(manifest), "--endpoint", url]
    return subprocess.run(argv, env=dict(os.environ), capture_output=True, text=True, timeout=180, check=False)


def test_verify_passes_the_faithful_server_and_names_the_default_ones_normalization(
    llamacpp_servers, small_beir, tmp_path
):
    base = ["run", "--dataset", str(small_beir), "--device", "cpu"]
    assert main([*base, "--no-normalize", "--out", str(tmp_path / "raw")]) == 0
    assert main([*base, "--out", str(tmp_path / "model")]) == 0
    ok = verify(tmp_path / "raw" / "manifest.json", llamacpp_servers.faithful)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = verify(tmp_path / "model" / "manifest.json", llamacpp_servers.default)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "FAIL  norm: served norms " in bad.stdout and "expected 1 (the contract normalizes)" in bad.stdout
    # the fingerprint holds unit vectors, so no derived alternative has the served norms: the equal directions
    # name the cause
    assert "every direction matches (min cosine 1.0000" in bad.stdout, bad.stdout
    assert "cause: the server does not normalize the vectors" in bad.stdout, bad.stdout
    assert "llama-cpp-python's server never L2-normalizes" in bad.stdout, bad.stdout


QUICK = ["--concurrency", "1,2", "--load-batch-sizes", "4", "--requests", "8", "--roles", "query"]


def test_load_profile_and_cutover_from_infinity_to_llamacpp(llamacpp_servers, infinity, small_beir, tmp_path, capsys):
    base = ["--dataset", str(small_beir), "--device", "cpu", "--no-cache", "--endpoint-timeout", "60", *QUICK]
    rc = load_main([*base, "--no-normalize", "--endpoint", llamacpp_servers.faithful, "--out", str(tmp_path / "p")])
    out = capsys.readouterr().out
    assert rc == 0, out
    levels = json.loads((tmp_path / "p" / "load.json").read_text())["profile"]["levels"]
    assert {lv["concurrency"] for lv in levels} == {1, 2}
    for lv in levels:
        assert lv["ok"] == 8 and lv["errors"] == 0 and lv["p95_ms"] >= lv["p50_ms"] > 0

    # the raw-vector contract: Infinity -> llama.cpp runs both sides and writes the cutover report
    cut = ["--old-endpoint", infinity, "--endpoint", llamacpp_servers.faithful, "--out", str(tmp_path / "cut")]
    rc = load_main([*base, "--no-normalize", *cut])
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "cut" / "load.json").read_text())["cutover"]
    assert rc == (0 if report["stands"] else 1), out
    assert {q["metric"] for q in report["quality"]} and all("delta" in q for q in report["quality"]), report
    assert (tmp_path / "cut" / "report.md").read_text().startswith("# Cutover: ")

    # the model's own (normalized) contract: llama.cpp's first answer breaks it, and the cutover stops there
    rc = main(["load", *base, *cut[:-1], str(tmp_path / "cut-normalized")])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "but the contract says normalized" in err, err


def test_a_fleet_of_llamacpp_and_infinity_is_stopped_by_the_member_check(
    llamacpp_servers, infinity, small_beir, tmp_path, capsys
):
    argv = ["run", "--dataset", str(small_beir), "--device", "cpu", "--no-cache", "--no-normalize"]
    argv += ["--endpoint", llamacpp_servers.faithful, "--endpoint", infinity, "--out", str(tmp_path / "fleet")]
    rc = main(argv)
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert rc != 0, text
    assert FleetMismatch.__name__ in text or "disagree" in text, text
    assert "norms off by" in text, text
    assert llamacpp_servers.faithful in text and infinity in text, text
