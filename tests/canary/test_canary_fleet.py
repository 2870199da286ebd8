"""`evalsuite canary --endpoint A --endpoint B ...`: every check against each member of a fleet on its own.

Fault servers on loopback (real HTTP, each serving the tiny model's real vectors) are the members; the canary
must name the member that departs from the contract, with its cause, and pass the others. The per-member
detection statement is checked against a seeded simulation of the fault servers' router.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from evalsuite.canary.embedding.checks.repeat import PROBE_TEXTS, member_detection_statement
from evalsuite.checks.detection import DETECT_CONFIDENCE, detection_probability, requests_needed
from evalsuite.cli import main

from .conftest import canary_argv
from .fault_server import Replica
from .proxy import Proxy, Router


def canary(urls, model_dir, dataset, out, *extra):
    return main(canary_argv(urls, model_dir, dataset, out, *extra))


@pytest.fixture
def fleet(fault_server, second_server, third_server):
    servers = [fault_server, second_server, third_server]
    for s in servers:
        s.latency = 0.0
    return servers


def test_three_members_one_unnormalized_names_member_2_with_its_cause(
    fleet, tiny_model_dir, canary_dataset, tmp_path, capsys
):
    fleet[1].normalize = False  # member 2 serves the pooled vectors as they are
    urls = [s.url for s in fleet]
    rc = canary(urls, tiny_model_dir, canary_dataset, tmp_path)
    out = capsys.readouterr().out
    assert rc == 1, out
    bad = f"member 2 of 3, {urls[1]}"
    assert f"{bad}: FAIL  vector agreement:" in out
    assert f"{bad}: cause: the server does not normalize" in out, out
    for good in (f"member 1 of 3, {urls[0]}", f"member 3 of 3, {urls[2]}"):
        assert f"{good}: all checks passed" in out and f"{good}: FAIL" not in out
    assert f"fleet of 3: 1 member(s) failed: {bad}: FAILED: " in out
    report = json.loads((tmp_path / "canary.json").read_text())
    assert report["schema_version"] == 2 and report["endpoints"] == urls
    assert report["passed"] is False and report["failed_members"] == [2]
    members = report["members"]
    assert [m["passed"] for m in members] == [True, False, True]
    assert [(m["member"], m["of"], m["endpoint"]) for m in members] == [(k + 1, 3, u) for k, u in enumerate(urls)]
    failed = {v["check"] for v in members[1]["verdicts"] if v["passed"] is False}
    assert {"vector_agreement", "norm_agreement", "repeated_requests", "retrieval_agreement"} <= failed
    assert [c["factor"] for d in members[1]["diagnosis"] for c in d["causes"]] == ["normalize"]
    assert all(v["passed"] is not False for m in (members[0], members[2]) for v in m["verdicts"])
    md = (tmp_path / "report.md").read_text()
    assert md.startswith("# Canary of a fleet of 3: FAIL")
    assert f"| 2 | {urls[1]} | FAIL | " in md and f"| 1 | {urls[0]} | PASS | - | - |" in md
    assert f"## Member 2 of 3: {urls[1]}: FAIL" in md and "### Triage" in md


def test_three_faithful_members_pass_and_each_gets_its_own_probe_requests(
    fleet, tiny_model_dir, canary_dataset, tmp_path, capsys, make_context, tiny_prepared
):
    urls = [s.url for s in fleet]
    rc = canary(urls, tiny_model_dir, canary_dataset, tmp_path, "--canary-detect", "0.05")
    out = capsys.readouterr().out
    assert rc == 0, out
    n = requests_needed(0.05)
    statement = member_detection_statement(n, 0.05, 3)
    assert n == 90 and "(90 requests per member;" in statement
    assert f"detection: {statement}" in out and "fleet of 3: every member passed every check" in out
    report = json.loads((tmp_path / "canary.json").read_text())
    assert report["passed"] is True and report["failed_members"] == []
    assert report["detection"] == {"statement": statement, "requests_per_member": n, "members": 3}
    # every member got every probe request (the canary texts PROBE_TEXTS at a time, in the client's order), not a
    # share of them
    rendered = make_context(urls[0]).canary_set().rendered(tiny_prepared.contract)
    expected = Counter(
        tuple(sorted(rendered[(k * PROBE_TEXTS + j) % len(rendered)] for j in range(PROBE_TEXTS))) for k in range(n)
    )
    for server in fleet:
        got = Counter(tuple(sorted(b["input"])) for b in server.bodies if isinstance(b["input"], list))
        missing = expected - got
        assert not missing, f"{server.url} missed {sum(missing.values())} probe requests"
    for m in report["members"]:
        probe = next(v for v in m["verdicts"] if v["check"] == "repeated_requests")
        assert probe["details"]["requests"] == n and probe["passed"] is True
    assert "Detection power: " + statement in (tmp_path / "report.md").read_text()


def test_a_member_that_fails_after_k_requests_is_caught_by_a_later_round(
    fleet, tiny_model_dir, canary_dataset, tmp_path, capsys
):
    urls = [s.url for s in fleet]
    assert canary(urls, tiny_model_dir, canary_dataset, tmp_path / "one") == 0
    k = fleet[2].answered  # the embeddings requests member 3 answers in one round
    capsys.readouterr()
    for s in fleet:
        s.answered = 0
    fleet[2].replica = Replica(1.0, "cls")  # from the request after k on, member 3 pools with CLS
    fleet[2].fault_after = k
    rc = canary(urls, tiny_model_dir, canary_dataset, tmp_path / "two", "--rounds", "2")
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "round 1/2: every member passed every check" in out
    assert "round 2/2: FAILED: member 3: " in out and "member 1:" not in out.split("round 2/2: FAILED:")[1]
    assert f"member 3 of 3, {urls[2]}: cause: the server pools with CLS" in out
    report = json.loads((tmp_path / "two" / "canary.json").read_text())
    assert report["failed_members"] == [3]
    assert [r["passed"] for r in report["members"][2]["rounds"]] == [True, False]
    assert [r["passed"] for r in report["members"][0]["rounds"]] == [True, True]


def test_the_per_member_statement_matches_a_seeded_simulation_of_a_fleet():
    """Each member probed with n requests on its own: a member whose fault reaches ``share`` of its requests
    is caught with the stated probability (4000 seeded fleets of 3, the bad member's router as the fault
    servers draw it), and the faithful members are never flagged."""
    for share, detect in ((0.05, 0.05), (0.1, 0.3), (0.02, 0.05)):
        n = requests_needed(detect)
        caught, flagged = 0, 0
        for seed in range(4000):
            routers = [Replica(0.0, seed=seed), Replica(share, seed=seed), Replica(0.0, seed=seed + 1)]
            hits = [any(r.route() for _ in range(n)) for r in routers]
            caught += hits[1]
            flagged += hits[0] or hits[2]
        assert flagged == 0
        assert caught / 4000 == pytest.approx(detection_probability(share, n), abs=0.02)
        if share >= detect:
            assert caught / 4000 >= DETECT_CONFIDENCE - 0.02
        assert f"probability {detection_probability(detect, n):.4f})" in member_detection_statement(n, detect, 3)


def test_an_endpoint_given_twice_is_a_usage_error(fault_server, tiny_model_dir, canary_dataset, tmp_path, capsys):
    rc = canary([fault_server.url, fault_server.url], tiny_model_dir, canary_dataset, tmp_path)
    assert rc == 2
    assert f"--endpoint {fault_server.url} is given twice" in capsys.readouterr().err


def test_the_proxy_forwards_the_key_and_bodies_as_is_to_each_member_in_turn(fault_server, second_server, api_key):
    import httpx

    for s in (fault_server, second_server):
        s.api_key = api_key
    proxy = Proxy([fault_server.url, second_server.url], Router(2))
    try:
        for k in range(4):
            body = {"input": [f"text {k}"], "model": "tiny-model"}
            r = httpx.post(f"{proxy.url}/embeddings", json=body, headers={"Authorization": f"Bearer {api_key}"})
            assert r.status_code == 200
            assert r.json()["data"][0]["embedding"] == pytest.approx(
                fault_server.expected([f"text {k}"])[0].tolist(), abs=1e-6
            )
        assert httpx.post(f"{proxy.url}/embeddings", json={"input": ["x"]}).status_code == 401
    finally:
        proxy.stop()
    assert proxy.router.routed == [0, 1, 0, 1, 0]
    assert [b["input"] for b in fault_server.bodies] == [["text 0"], ["text 2"], ["x"]]
    assert [b["input"] for b in second_server.bodies] == [["text 1"], ["text 3"]]
    assert all(h["Authorization"] == f"Bearer {api_key}" for h in fault_server.headers[:2] + second_server.headers)


def test_behind_one_proxy_url_a_cls_member_fails_the_canary_and_as_members_it_is_named(
    fault_server, second_server, tiny_model_dir, canary_dataset, tmp_path, capsys
):
    second_server.pooling = "cls"
    for s in (fault_server, second_server):
        s.latency = 0.0
    proxy = Proxy([fault_server.url, second_server.url], Router(2, share=0.1, bad=1, seed=3))
    try:
        rc = canary([proxy.url], tiny_model_dir, canary_dataset, tmp_path / "proxy")
    finally:
        proxy.stop()
    out = capsys.readouterr().out
    assert rc == 1, out
    assert 0 < proxy.router.routed.count(1) < len(proxy.router.routed) / 4
    rc = canary([fault_server.url, second_server.url], tiny_model_dir, canary_dataset, tmp_path / "members")
    out = capsys.readouterr().out
    assert rc == 1
    assert f"member 2 of 2, {second_server.url}: cause: the server pools with CLS" in out
    assert f"member 1 of 2, {fault_server.url}: all checks passed" in out
