"""`evalsuite load`: the profile and the old-vs-new cutover against fake deployments on loopback.

The parser is built here from the load job's declaration alone (``evalsuite.jobs.add_job``), as ``evalsuite.cli``
builds each subcommand.
"""

from __future__ import annotations

import argparse
import json
import re

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.jobs import LOAD, add_job
from evalsuite.testing.builders import run_argv


def load_main(argv):
    parser = argparse.ArgumentParser(prog="evalsuite")
    add_job(parser.add_subparsers(dest="command", required=True), LOAD)
    args = parser.parse_args(["load", *argv])
    return args.func(args)


@pytest.fixture
def base_args(tiny_model_dir, load_dataset):
    return run_argv(str(tiny_model_dir), str(load_dataset), "--endpoint-timeout", "10", command=None)


QUICK = ["--concurrency", "1,4", "--load-batch-sizes", "4", "--requests", "16"]


def test_cutover_flags_the_slower_deployment_on_capacity_while_quality_holds(fake_server, base_args, tmp_path, capsys):
    # far apart (50x) so that a loaded CI machine, whose own overhead is added to both, cannot close the gap
    old, new = fake_server(delay=0.002), fake_server(delay=0.1)
    rc = load_main([*base_args, *QUICK, "--old-endpoint", old.url, "--endpoint", new.url, "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1, out
    report = json.loads((tmp_path / "load.json").read_text())
    cut = report["cutover"]
    assert cut["stands"] is False and cut["quality_holds"] is True and cut["capacity_holds"] is False
    assert all(q["delta"] == 0.0 and q["holds"] for q in cut["quality"])  # same vectors, same rankings
    gates = {g["gate"]: g for g in cut["gates"]}
    assert gates["throughput:max_rel_drop=10%"]["passed"] is False
    assert gates["p95_ms:max_rel_rise=20%"]["passed"] is False
    assert gates["error_rate:max_abs_rise=0"]["passed"] is True
    for lv in gates["throughput:max_rel_drop=10%"]["levels"]:
        assert lv["new"] < 0.9 * lv["old"]
    assert "the change does not stand: capacity fails" in out
    levels = report["profile"]["levels"]
    assert {(lv["target"], lv["concurrency"]) for lv in levels} == {(t, c) for t in ("old", "new") for c in (1, 4)}
    assert (tmp_path / "report.md").read_text().startswith("# Cutover: DOES NOT STAND")
    html = (tmp_path / "report.html").read_text()
    assert "data:image/png;base64," in html and "Throughput and latency" in html


def test_cutover_stands_when_both_match(fake_server, base_args, tmp_path, capsys):
    old, new = fake_server(delay=0.02), fake_server(delay=0.02)
    rc = load_main(
        [
            *base_args,
            *QUICK,
            "--old-endpoint",
            old.url,
            "--endpoint",
            new.url,
            "--out",
            str(tmp_path),
            "--capacity-gate",
            "throughput:max_rel_drop=60%",
            "--capacity-gate",
            "p95_ms:max_rel_rise=150%",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    cut = json.loads((tmp_path / "load.json").read_text())["cutover"]
    assert cut["stands"] is True and [g["gate"] for g in cut["gates"]] == [
        "throughput:max_rel_drop=60%",
        "p95_ms:max_rel_rise=150%",
    ]
    assert "the change stands" in out


def test_cutover_flags_a_quality_drop_even_when_capacity_holds(
    fake_server, tiny_model_dir, minibeir_dir, tmp_path, capsys
):
    # the fixture dataset (190 queries) lets the paired bootstrap decide; the new server's vectors ignore the words
    old, new = fake_server(), fake_server(vectors="random")
    rc = load_main(
        run_argv(
            str(tiny_model_dir),
            str(minibeir_dir),
            "--concurrency",
            "1",
            "--load-batch-sizes",
            "2",
            "--requests",
            "4",
            "--roles",
            "query",
            "--old-endpoint",
            old.url,
            "--endpoint",
            new.url,
            "--out",
            str(tmp_path),
            "--capacity-gate",
            "throughput:max_rel_drop=90%",
            command=None,
        )
    )
    out = capsys.readouterr().out
    assert rc == 1
    cut = json.loads((tmp_path / "load.json").read_text())["cutover"]
    assert cut["quality_holds"] is False and cut["capacity_holds"] is True
    ndcg = next(q for q in cut["quality"] if q["metric"] == "ndcg@10")
    assert ndcg["decision"] == "fail" and ndcg["queries"] == 190
    assert ndcg["ci_high"] < -0.005 and ndcg["delta"] == pytest.approx(ndcg["new"] - ndcg["old"], abs=1e-9)
    assert "quality drops" in cut["verdict"]
    assert "quality  ndcg@10: delta -0." in out and "against margin -0.005: fail" in out


def test_cutover_quality_is_undecided_on_too_few_queries(fake_server, base_args, tmp_path, capsys):
    old, new = fake_server(), fake_server(vectors="random")
    rc = load_main(
        [
            *base_args,
            "--concurrency",
            "1",
            "--load-batch-sizes",
            "2",
            "--requests",
            "4",
            "--old-endpoint",
            old.url,
            "--endpoint",
            new.url,
            "--out",
            str(tmp_path),
            "--capacity-gate",
            "throughput:max_rel_drop=90%",
        ]
    )
    capsys.readouterr()
    assert rc == 1  # an undecided quality is not a change that stands
    cut = json.loads((tmp_path / "load.json").read_text())["cutover"]
    ndcg = next(q for q in cut["quality"] if q["metric"] == "ndcg@10")
    assert ndcg["queries"] == 6 and ndcg["decision"] == "inconclusive" and ndcg["holds"] is None
    assert ndcg["delta"] < 0 and ndcg["ci_low"] < -0.005 < ndcg["ci_high"]
    assert cut["quality_holds"] is None and "quality undecided" in cut["verdict"]
    assert "queries would decide it" in cut["verdict"]
    assert "queries would decide it" in (tmp_path / "report.md").read_text()


def test_profile_of_an_endpoint_and_the_local_reference(fake_server, base_args, tmp_path, capsys):
    server = fake_server(delay=0.01)
    rc = load_main(
        [
            *base_args,
            "--endpoint",
            server.url,
            "--local",
            "--concurrency",
            "1,2",
            "--load-batch-sizes",
            "2,4",
            "--requests",
            "6",
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    report = json.loads((tmp_path / "load.json").read_text())
    assert "cutover" not in report
    levels = report["profile"]["levels"]
    assert len(levels) == 2 * 2 * 2  # 2 targets x 2 batch sizes x 2 concurrency levels
    assert {lv["target"] for lv in levels} == {"server", "local"}
    for lv in levels:
        assert lv["ok"] == 6 and lv["errors"] == 0 and lv["p95_ms"] >= lv["p50_ms"] > 0
        assert sum(b["requests"] for b in lv["buckets"].values()) == 6
    assert "server batch   2 x   1:" in out and "local  batch   4 x   2:" in out
    md = (tmp_path / "report.md").read_text()
    assert md.startswith("# Load profile") and "## By length bucket" in md
    by = {(lv["target"], lv["batch_size"], lv["concurrency"]): lv for lv in levels}
    server_lv, local_lv = by[("server", 4, 2)], by[("local", 4, 2)]
    ratio = (server_lv["inputs"] / server_lv["wall_seconds"]) / (local_lv["inputs"] / local_lv["wall_seconds"])
    assert "## What a server buys (against the local reference)" in md
    shown = re.search(r"\| server \| 4 \| 2 \| ([0-9.]+)x \|", md)
    assert shown is not None and float(shown.group(1)) == pytest.approx(ratio, abs=0.011)
    assert "data:image/png;base64," in (tmp_path / "report.html").read_text()


def test_usage_errors(base_args, tmp_path):
    with pytest.raises(SpecError, match="--endpoint URL"):
        load_main([*base_args, "--out", str(tmp_path)])
    with pytest.raises(SpecError, match="not both"):
        load_main([*base_args, "--local", "--requests", "3", "--duration", "1"])
    with pytest.raises(SystemExit):
        load_main([*base_args, "--local", "--capacity-gate", "p95_ms:max_rel_drop=10%"])
    with pytest.raises(SystemExit):
        load_main([*base_args, "--local", "--concurrency", "0,4"])


def test_a_profile_where_no_request_succeeded_at_a_level_is_not_a_profile(fake_server, base_args, tmp_path, capsys):
    # every embeddings request answers 503: the levels measured nothing; say so and exit 1, never exit 0
    server = fake_server()
    server.statuses = [503]
    args = ["--endpoint", server.url, "--concurrency", "1", "--load-batch-sizes", "2", "--requests", "3"]
    rc = load_main([*base_args, *args, "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "FAIL  server batch 2 x 1: no request succeeded: " in out and "HTTP 503" in out
    assert "NOT A PROFILE: 1 of 1 level(s) had no successful request" in out
