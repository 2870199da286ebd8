"""The identity check on an engine that serves no health route (llama-cpp-python, issue 31), on loopback.

A server whose model list has llama-cpp-python's exact shape and whose /health answers 404 passes identity,
saying why; any other health failure (a 503), or a 404 from an engine known to have /health (vLLM), still
fails. The real llama-cpp-python server is in tests/llamacpp. Bugs caught: the exemption keyed on the engine
alone (a 503 passing), on the status alone (vLLM's 404 passing), or a detection that takes any ``owned_by``.
"""

from __future__ import annotations

import json

import pytest

from evalsuite.canary.embedding.registry import run_check
from evalsuite.diagnose.engines import facts_from_models

LLAMA_CPP_PYTHON = {"id": "tiny-model", "object": "model", "owned_by": "me", "permissions": []}
VLLM = {"id": "tiny-model", "object": "model", "owned_by": "vllm", "root": "/models/tiny", "max_model_len": 64}


def routes(fault_server, entry: dict, health_status: int) -> None:
    """The fault server's embeddings, this model list entry, and /health answering ``health_status``."""
    from werkzeug import Response

    server = fault_server.httpserver
    server.clear()
    server.expect_request("/health", method="GET").respond_with_response(Response("", status=health_status))
    server.expect_request("/v1/models", method="GET").respond_with_json({"object": "list", "data": [entry]})
    server.expect_request("/v1/embeddings", method="POST").respond_with_handler(fault_server._embeddings)


@pytest.mark.parametrize(
    "entry, engine",
    [
        (LLAMA_CPP_PYTHON, "llama-cpp-python"),
        ({**LLAMA_CPP_PYTHON, "created": 1}, None),  # "me" plus another field: not llama-cpp-python's shape
        ({"id": "m", "object": "model", "owned_by": "llamacpp", "created": 1, "meta": {}}, "llamacpp"),
        (VLLM, "vllm"),
        ({"id": "m", "object": "model", "owned_by": "me"}, None),
    ],
)
def test_the_engine_is_read_from_the_model_list(entry, engine):
    assert facts_from_models({"object": "list", "data": [entry]}, None).engine == engine


def test_a_llama_cpp_python_server_without_health_passes_identity_saying_why(fault_server, make_context):
    routes(fault_server, LLAMA_CPP_PYTHON, 404)
    v = run_check("identity", make_context(fault_server.url))
    assert v.passed is True, v.message
    assert "no health route" in v.message and "llama-cpp-python serves none" in v.message, v.message
    assert v.details["engine"] == "llama-cpp-python"
    assert set(v.details["health"].values()) == {404}
    assert "; 32 dimensions" in v.message, v.message


@pytest.mark.parametrize(
    "entry, status",
    [(LLAMA_CPP_PYTHON, 503), (VLLM, 404), ({**LLAMA_CPP_PYTHON, "owned_by": "someone"}, 404)],
)
def test_any_other_missing_health_still_fails_identity(fault_server, make_context, entry, status):
    routes(fault_server, entry, status)
    v = run_check("identity", make_context(fault_server.url))
    assert v.passed is False
    assert v.message.startswith("identity: health does not answer 200 ("), v.message
    assert f"-> {status}" in v.message and json.dumps(v.details)
