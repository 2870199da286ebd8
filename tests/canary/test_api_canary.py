"""``evalsuite.canary(...)`` against the fault server: the verdicts `evalsuite canary` reports, quietly, and with
``out`` the same canary.json (``to_json()``), for one endpoint over rounds and for a fleet."""

from __future__ import annotations

import json

import pytest

import evalsuite
from evalsuite.base.errors import SpecError

from .conftest import API_KEY_ENV, checks_but


def test_a_faithful_endpoint_passes_quietly_and_to_json_is_canary_json(
    fault_server, tiny_model_dir, canary_dataset, tmp_path, api_key, capsys
):
    fault_server.api_key = api_key
    report = evalsuite.canary(
        fault_server.url,
        tiny_model_dir,
        canary_dataset,
        device="cpu",
        use_cache=False,
        api_key_env=API_KEY_ENV,
        out=tmp_path,
    )
    assert capsys.readouterr().out == ""  # the front door prints nothing
    assert report.passed and report.exit_status == 0 and report.failed == []
    assert [v.check for v in report.verdicts] == checks_but("matryoshka")
    assert report.to_json() == (tmp_path / "canary.json").read_text(encoding="utf-8")
    assert report.to_dict()["settings"]["api_key_env"] == API_KEY_ENV and api_key not in report.to_json()


def test_a_broken_endpoint_fails_in_every_round_and_names_the_check(
    fault_server, tiny_model_dir, canary_dataset, tmp_path
):
    fault_server.pooling = "cls"
    report = evalsuite.canary(
        [fault_server.url], tiny_model_dir, canary_dataset, device="cpu", use_cache=False, rounds=2, out=tmp_path
    )
    assert not report.passed and report.exit_status == 1 and "vector_agreement" in report.failed
    data = json.loads((tmp_path / "canary.json").read_text())
    assert [r["passed"] for r in data["rounds"]] == [False, False] and data["passed"] is False
    assert report.to_json() == (tmp_path / "canary.json").read_text(encoding="utf-8")


def test_a_fleet_names_its_failing_member(fault_server, second_server, tiny_model_dir, canary_dataset, tmp_path):
    second_server.pooling = "cls"
    report = evalsuite.canary(
        [fault_server.url, second_server.url], tiny_model_dir, canary_dataset, device="cpu", use_cache=False
    )
    assert not report.passed and "vector_agreement" in report.failed
    members = report.to_dict()["members"]
    assert [m["passed"] for m in members] == [True, False]
    report.write(tmp_path)
    assert report.to_json() == (tmp_path / "canary.json").read_text(encoding="utf-8")


def test_usage_errors_are_raised_before_anything_loads(tiny_model_dir, canary_dataset):
    with pytest.raises(SpecError, match="the canary needs --endpoint URL"):
        evalsuite.canary([], tiny_model_dir, canary_dataset)
    with pytest.raises(SpecError, match="--rounds 1001 is more than 1000"):
        evalsuite.canary("http://127.0.0.1:9/v1", tiny_model_dir, canary_dataset, rounds=1001)
    with pytest.raises(SpecError, match=r"canary_min_cosine=2 .*--canary-min-cosine"):
        evalsuite.canary("http://127.0.0.1:9/v1", tiny_model_dir, canary_dataset, canary_min_cosine=2)
