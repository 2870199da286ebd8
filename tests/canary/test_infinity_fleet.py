"""A fleet of real infinity-emb servers (the session's faithful one and its CLS-pooling copy, see conftest)
behind a seeded loopback proxy (tests/canary/proxy.py), and the same servers given to the canary member by
member.

Through the one proxy URL, a CLS member answering a share of the requests fails the canary with its default
settings (the two servers also serve different names, so its answers fail on the name as well as on the
vectors); given the members' own URLs, the canary names the CLS member with its cause and passes the
faithful one. That the proxy itself changes nothing (a proxy over faithful members passes) is checked
on loopback servers (tests/canary/test_canary_fleet.py): each canary against real servers costs a minute.
"""

from __future__ import annotations

import json

import pytest

from evalsuite.cli import main

from .conftest import canary_argv
from .proxy import Proxy, Router

# its own group: the other worker can run it beside the rest of the Infinity tier (starting its own servers)
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("infinity-fleet")]

KEY_ENV = "EVALSUITE_INFINITY_TEST_KEY"


@pytest.fixture
def key(infinity_servers, monkeypatch) -> str:
    monkeypatch.setenv(KEY_ENV, infinity_servers["key"])
    return str(infinity_servers["key"])


def canary(urls, dataset, out, cache):
    return main(canary_argv(urls, None, dataset, out, "--api-key-env", KEY_ENV, cache_dir=cache))


def failed_checks(report: dict) -> set[str]:
    return {v["check"] for v in report["verdicts"] if v["passed"] is False}


def test_a_proxy_sending_one_request_in_three_to_the_cls_member_fails_the_canary(
    infinity_servers, key, canary_dataset, tmp_path, reference_cache, capsys
):
    good, cls = infinity_servers["good"].url, infinity_servers["cls"].url
    proxy = Proxy([good, cls], Router(2, share=1 / 3, bad=1, seed=7))
    try:
        rc = canary([proxy.url], canary_dataset, tmp_path, reference_cache)
    finally:
        proxy.stop()
    out = capsys.readouterr().out
    assert rc == 1, out
    routed = proxy.router.routed
    assert 0 < routed.count(1) < len(routed), routed  # the CLS member answered a share of the requests, not all
    report = json.loads((tmp_path / "canary.json").read_text())
    assert report["passed"] is False and report["endpoint"] == proxy.url
    # the two servers also serve different names (the CLS copy's directory), so which checks fail depends on
    # which member answered what; every failure is the CLS member's: its vectors or its name
    messages = [v["message"] for v in report["verdicts"] if v["passed"] is False]
    assert any("min cosine 0." in m or "response names model" in m for m in messages), out
    assert key not in out


def test_the_members_given_one_by_one_name_the_cls_one_and_pass_the_faithful_one(
    infinity_servers, key, canary_dataset, tmp_path, reference_cache, capsys
):
    good, cls = infinity_servers["good"].url, infinity_servers["cls"].url
    rc = canary([good, cls], canary_dataset, tmp_path, reference_cache)
    out = capsys.readouterr().out
    assert rc == 1, out
    assert f"member 1 of 2, {good}: all checks passed" in out
    assert f"member 2 of 2, {cls}: FAIL  vector agreement: min cosine 0." in out
    assert f"member 2 of 2, {cls}: cause: the server pools with CLS (the contract's: mean)" in out
    assert f"fleet of 2: 1 member(s) failed: member 2 of 2, {cls}: FAILED: " in out
    report = json.loads((tmp_path / "canary.json").read_text())
    assert report["failed_members"] == [2]
    first, second = report["members"]
    assert first["passed"] is True and not failed_checks(first)
    assert {"vector_agreement", "repeated_requests"} <= failed_checks(second)
    assert [c["factor"] for d in second["diagnosis"] for c in d["causes"]] == ["pooling"]
    assert key not in out and key not in (tmp_path / "report.md").read_text()
