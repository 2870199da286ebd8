"""CanarySettings: an EndpointConfig plus the canary's thresholds; one place per default."""

from __future__ import annotations

import dataclasses
import math

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.canary.embedding.options import CANARY_OPTIONS
from evalsuite.canary.embedding.settings import CanarySettings
from evalsuite.encode.endpoint import EndpointConfig, Secret

URL = "http://127.0.0.1:8000/v1"


def test_the_endpoint_part_is_an_endpoint_config():
    s = CanarySettings(
        endpoint=URL + "/embeddings",
        served_model="prod",
        timeout=2.5,
        concurrency=2,
        batch_size=8,
        encoding_format="base64",
        max_retries=1,
        min_cosine=0.98,
    )
    assert s.endpoint_config == EndpointConfig(
        url=URL, model="prod", timeout=2.5, concurrency=2, batch_size=8, encoding_format="base64", max_retries=1
    )
    assert (s.endpoint, s.served_model, s.timeout, s.concurrency, s.batch_size, s.encoding_format, s.max_retries) == (
        URL,
        "prod",
        2.5,
        2,
        8,
        "base64",
        1,
    )
    assert s.min_cosine == 0.98
    whole = CanarySettings(EndpointConfig(url=URL, timeout=7.0), dimensions=[16, 8])
    assert whole.endpoint_config.timeout == 7.0 and whole.dimensions == (16, 8)
    # replace() keeps the endpoint part and changes one field of either part
    r = dataclasses.replace(s, api_key_env="K", timeout=9.0)
    assert r.endpoint_config == dataclasses.replace(s.endpoint_config, timeout=9.0)
    assert (r.api_key_env, r.min_cosine) == ("K", 0.98)


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"timeout": 0}, "endpoint timeout must be > 0"),  # EndpointConfig's own validation
        ({"concurrency": 0}, "endpoint concurrency must be > 0"),
        ({"encoding_format": "bytes"}, "encoding format 'bytes' is not valid"),
        ({"min_cosine": 0.0}, r"canary min_cosine must be in \(0, 1\], got 0.0"),
        ({"batch_min_cosine": 1.01}, r"canary batch_min_cosine must be in \(0, 1\]"),
        ({"max_ndcg_delta": math.nan}, r"canary max_ndcg_delta must be in \[0, 1\], got nan"),
        ({"max_ndcg_delta": True}, r"canary max_ndcg_delta must be in \[0, 1\], got True"),
        ({"min_cosine": "0.9"}, r"canary min_cosine must be in \(0, 1\], got '0.9'"),
        ({"dimensions": (16, 0)}, r"canary dimensions must be positive integers, got \[16, 0\]"),
        ({"bogus": 1}, r"unknown canary setting\(s\) \['bogus'\]"),
        ({"api_key": Secret("sk-x")}, r"unknown canary setting\(s\) \['api_key'\]"),
    ],
)
def test_bad_settings_raise_a_spec_error_naming_the_field(kw, needle):
    with pytest.raises(SpecError, match=needle):
        CanarySettings(endpoint=URL, **kw)


def test_bounds_are_inclusive_where_they_say_so():
    s = CanarySettings(endpoint=URL, min_cosine=1.0, batch_min_cosine=1e-9, max_ndcg_delta=0.0)
    assert (s.min_cosine, s.max_ndcg_delta) == (1.0, 0.0)
    with pytest.raises(SpecError, match="needs --endpoint URL"):
        CanarySettings(min_cosine=0.9)


def test_every_canary_option_has_the_default_the_settings_use():
    names = [o.dest for o in CANARY_OPTIONS]  # what collect() returns (--suspect-model appends to suspect_models)
    assert sorted(names) == sorted(CanarySettings.option_fields())
    plain = CanarySettings.from_values({"endpoint": URL})
    as_dict = plain.to_dict()
    for name in names:
        target = CanarySettings.option_fields()[name]
        key = {"url": "endpoint", "model": "served_model"}.get(target, target)
        if name == "endpoint":
            assert CanarySettings.option_default(name) is None  # required: no default
            continue
        expected = as_dict[key]
        assert CanarySettings.option_default(name) == (tuple(expected) if isinstance(expected, list) else expected)
    assert CanarySettings.option_default("endpoint_timeout") == EndpointConfig(url=URL).timeout == 30.0
    assert CanarySettings.option_default("canary_min_cosine") == 0.99
    with pytest.raises(SpecError, match="unknown canary option 'nope'"):
        CanarySettings.option_default("nope")
    assert CanarySettings.option_of("dimensions") == "canary_dimensions"
    assert CanarySettings.option_of("served_model") == "served_model"


def test_from_values_fills_both_parts_and_to_dict_keeps_its_keys():
    s = CanarySettings.from_values(
        {
            "endpoint": URL,
            "served_model": "m",
            "endpoint_timeout": 3.0,
            "endpoint_concurrency": 2,
            "endpoint_batch_size": 4,
            "encoding_format": "base64",
            "api_key_env": "EMBED_KEY",
            "canary_min_cosine": 0.95,
            "canary_max_ndcg_delta": 0.01,
            "canary_dimensions": (8,),
        }
    )
    assert s.endpoint_config == EndpointConfig(
        url=URL, model="m", timeout=3.0, concurrency=2, batch_size=4, encoding_format="base64"
    )
    assert s.to_dict() == {
        "endpoint": URL,
        "served_model": "m",
        "api_key_env": "EMBED_KEY",
        "min_cosine": 0.95,
        "batch_min_cosine": 0.999,
        "max_ndcg_delta": 0.01,
        "min_overlap": 0.9,
        "detect": 0.1,
        "dimensions": [8],
        "timeout": 3.0,
        "concurrency": 2,
        "batch_size": 4,
        "encoding_format": "base64",
        "max_retries": 3,
        "deadline": 3600.0,
        "suspect_models": [],
        "collision_cosine": 0.99999,
    }


def test_clients_are_built_from_the_settings_endpoint_config(tiny_prepared, monkeypatch):
    from evalsuite.canary.embedding.context import CanaryContext

    monkeypatch.setenv("EVALSUITE_SETTINGS_TEST_KEY", "sk-settings-test")
    s = CanarySettings(endpoint=URL, timeout=4.0, batch_size=3, api_key_env="EVALSUITE_SETTINGS_TEST_KEY")
    ctx = CanaryContext(s, tiny_prepared, reference_encoder=lambda: None, reference_result=lambda: None)
    with ctx.make_client(model="m", models=frozenset({"m"})) as client:
        assert client.config == dataclasses.replace(s.endpoint_config, model="m", api_key=Secret("sk-settings-test"))
    with ctx.make_client(model=None, models=frozenset(), api_key=None, max_retries=0) as client:
        assert client.config == dataclasses.replace(s.endpoint_config, max_retries=0)
    assert "sk-settings-test" not in repr(s) + repr(s.to_dict())


def test_several_endpoints_make_one_settings_per_member_sharing_the_rest():
    other = "http://127.0.0.1:8001/v1"
    members = CanarySettings.members_from_values(
        {"endpoint": [URL, other], "canary_min_cosine": 0.98, "canary_detect": 0.05, "api_key_env": "K"}
    )
    assert [m.endpoint for m in members] == [URL, other]
    assert all((m.min_cosine, m.detect, m.api_key_env) == (0.98, 0.05, "K") for m in members)
    assert CanarySettings.members_from_values({"endpoint": URL}) == (CanarySettings(URL),)
    assert CanarySettings.from_values({"endpoint": [URL]}) == CanarySettings(URL)
    with pytest.raises(SpecError, match="2 --endpoint URLs where one is checked"):
        CanarySettings.from_values({"endpoint": [URL, other]})
    with pytest.raises(SpecError, match=f"--endpoint {URL} is given twice"):
        CanarySettings.members_from_values({"endpoint": [URL, other, URL]})
    with pytest.raises(SpecError, match="the canary needs --endpoint URL"):
        CanarySettings.members_from_values({"endpoint": []})
