"""`evalsuite canary` end to end against the fault server: verdicts printed, files written, exit codes."""

from __future__ import annotations

import json
import logging

from evalsuite.cli import main

from .conftest import API_KEY_ENV, canary_argv, checks_but


def canary(url, model_dir, dataset, out, *extra):
    return main(canary_argv(url, model_dir, dataset, out, *extra))


def test_cli_passes_writes_reports_and_never_shows_the_key(
    fault_server, tiny_model_dir, canary_dataset, tmp_path, api_key, capsys, caplog
):
    caplog.set_level(logging.DEBUG)
    fault_server.api_key = api_key
    rc = canary(
        fault_server.url,
        tiny_model_dir,
        canary_dataset,
        tmp_path,
        "--api-key-env",
        API_KEY_ENV,
        "--endpoint-batch-size",
        "8",
    )
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert "PASS  vector agreement: 27 texts" in out and "PASS  auth: no key -> HTTP 401" in out
    assert "all checks passed" in out
    report = json.loads((tmp_path / "canary.json").read_text())
    assert report["passed"] is True and report["served_model"] == "tiny-model"
    assert [v["check"] for v in report["verdicts"]] == checks_but("matryoshka")
    assert report["settings"]["api_key_env"] == API_KEY_ENV
    md = (tmp_path / "report.md").read_text()
    assert md.startswith("# Canary: PASS") and "| retrieval_agreement | PASS |" in md
    assert "### Slices that moved most" in md and "| qlen<=32 | ndcg@10 |" in md
    for text in (out, err, caplog.text, md, json.dumps(report)):
        assert api_key not in text


def test_cli_exits_1_naming_the_failed_check(fault_server, tiny_model_dir, canary_dataset, tmp_path, capsys):
    fault_server.pooling = "cls"
    rc = canary(fault_server.url, tiny_model_dir, canary_dataset, tmp_path)
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAIL  vector agreement: min cosine" in out and "FAILED: vector_agreement" in out
    report = json.loads((tmp_path / "canary.json").read_text())
    assert report["passed"] is False
    assert (tmp_path / "report.md").read_text().startswith("# Canary: FAIL")


def test_cli_usage_errors_exit_2(tiny_model_dir, canary_dataset, tmp_path, capsys, monkeypatch):
    assert main(["canary", "--model", str(tiny_model_dir), "--out", str(tmp_path)]) == 2
    assert "needs --endpoint URL" in capsys.readouterr().err
    monkeypatch.delenv("EVALSUITE_TEST_UNSET_KEY", raising=False)
    rc = canary(
        "http://127.0.0.1:9/v1", tiny_model_dir, canary_dataset, tmp_path, "--api-key-env", "EVALSUITE_TEST_UNSET_KEY"
    )
    assert rc == 2
    assert "EVALSUITE_TEST_UNSET_KEY, but that environment variable is not set" in capsys.readouterr().err
    assert not (tmp_path / "canary.json").exists()


def test_rounds_report_each_round_and_exit_with_the_worst(
    fault_server, tiny_model_dir, canary_dataset, tmp_path, capsys
):
    from .fault_server import Replica

    fault_server.latency = 0.0
    assert canary(fault_server.url, tiny_model_dir, canary_dataset, tmp_path / "one") == 0
    per_round = fault_server.answered  # embeddings answers one round takes
    capsys.readouterr()
    # a fault that appears after warm-up: every answer from the second round on comes from a CLS replica
    fault_server.fault_after = fault_server.answered + per_round
    fault_server.replica = Replica(1.0, "cls")
    rc = canary(fault_server.url, tiny_model_dir, canary_dataset, tmp_path, "--rounds", "3", "--interval", "0.05")
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "round 1/3: all checks passed" in out and "round 2/3: FAILED: vector_agreement" in out
    assert "round 3/3: FAILED: " in out and "3 rounds, 2 failed (2, 3); FAILED: vector_agreement" in out
    report = json.loads((tmp_path / "canary.json").read_text())
    assert report["passed"] is False and [r["passed"] for r in report["rounds"]] == [True, False, False]
    assert "vector_agreement" in report["rounds"][1]["failed"]
    assert any(v["status"] == "FAIL" for v in report["verdicts"])  # the worst round's verdicts in full
    md = (tmp_path / "report.md").read_text()
    assert "## Rounds" in md and "3 rounds, 2 failed" in md and "| 1 | " in md


def test_rounds_and_interval_are_bounded(tiny_model_dir, canary_dataset, tmp_path, capsys):
    rc = canary("http://127.0.0.1:9/v1", tiny_model_dir, canary_dataset, tmp_path, "--rounds", "1001")
    assert rc == 2 and "--rounds 1001 is more than 1000" in capsys.readouterr().err
    rc = canary("http://127.0.0.1:9/v1", tiny_model_dir, canary_dataset, tmp_path, "--interval", "-1")
    assert rc == 2 and "--interval -1 must be between 0 and 3600 seconds" in capsys.readouterr().err
