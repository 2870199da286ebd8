"""Canary test servers: a fault-injecting OpenAI-style server (pytest-httpserver, real HTTP on
loopback, vectors from the real tiny reference model) and real infinity-emb servers.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .fault_server import FaultServer, serving
from .raw_server import RawServer

API_KEY_ENV = "EVALSUITE_CANARY_TEST_KEY"


def canary_argv(
    urls: str | list[str], model_dir: Path | None, dataset: Path, out: Path, *extra: str, cache_dir: Path | None = None
) -> list[str]:
    """``evalsuite canary`` arguments: every URL as an ``--endpoint`` (several: a fleet), the model (None: the
    bundled one) and the dataset on CPU, the embedding cache in ``cache_dir`` (None: no cache), reports in
    ``out``, then ``extra``."""
    endpoints = [urls] if isinstance(urls, str) else urls
    return [
        "canary",
        *(a for url in endpoints for a in ("--endpoint", url)),
        *(("--model", str(model_dir)) if model_dir is not None else ()),
        *("--dataset", str(dataset), "--device", "cpu"),
        *(("--cache-dir", str(cache_dir)) if cache_dir is not None else ("--no-cache",)),
        *("--out", str(out), *extra),
    ]


# every embedding check, in the order the registry runs them (tests/canary/test_registry.py holds the registry to it)
CHECK_ORDER = [
    "identity",
    "vector_agreement",
    "norm_agreement",
    "batch_invariance",
    "repeated_requests",
    "retrieval_agreement",
    "bad_input",
    "length_ladder",
    "case_variants",
    "distinct_inputs",
    "determinism",
    "stress_inputs",
    "matryoshka",
    "auth",
]


def checks_but(*left_out: str) -> list[str]:
    """CHECK_ORDER without the checks a run skips (matryoshka without --canary-dimensions, auth without a key)."""
    return [c for c in CHECK_ORDER if c not in left_out]


# the small dataset of the top-level conftest, plus two documents and queries of other topics
@pytest.fixture(scope="session")
def canary_dataset(extended_beir) -> Path:
    return extended_beir(2)


@pytest.fixture(scope="session")
def tiny_info(tiny_model_dir):
    from evalsuite.model import resolve_model

    return resolve_model(str(tiny_model_dir))


@pytest.fixture(scope="session")
def server_encoders(tiny_info) -> Callable[[int], Any]:
    """The tiny model's local encoder per max length, shared by every fault server (what it "serves")."""
    from evalsuite.encode.local import LocalEncoder

    cache: dict[int, Any] = {}

    def get(max_length: int) -> Any:
        if max_length not in cache:
            cache[max_length] = LocalEncoder(tiny_info, device="cpu", max_length=max_length, progress=False)
        return cache[max_length]

    return get


@pytest.fixture(scope="session")
def _loopback_httpserver():
    from pytest_httpserver import HTTPServer

    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fault_server(_loopback_httpserver, server_encoders, tiny_info):
    """A fresh FaultServer (faithful until a test sets a fault) on the session's loopback server."""
    _loopback_httpserver.clear()
    fs = FaultServer(
        _loopback_httpserver, server_encoders, hidden=tiny_info.hidden_size, max_length=tiny_info.default_max_length
    )
    try:
        yield fs
    finally:
        fs.release.set()
        _loopback_httpserver.clear()


def _own_server(server_encoders, tiny_info):
    """A FaultServer on its own loopback port (the first is ``fault_server``), stopped after the test."""
    with serving(server_encoders, tiny_info.hidden_size, tiny_info.default_max_length) as fs:
        yield fs


@pytest.fixture
def second_server(server_encoders, tiny_info):
    yield from _own_server(server_encoders, tiny_info)


@pytest.fixture
def third_server(server_encoders, tiny_info):
    yield from _own_server(server_encoders, tiny_info)


@pytest.fixture
def api_key(monkeypatch) -> str:
    """A fresh secret in the environment variable the canary is told to read."""
    import secrets

    key = "sk-canary-" + secrets.token_hex(12)
    monkeypatch.setenv(API_KEY_ENV, key)
    return key


@pytest.fixture
def tiny_prepared(prepared_with):
    return prepared_with()


@pytest.fixture
def prepared_with(tiny_model_dir, canary_dataset):
    """``prepared_with(**changes)``: the tiny model on the canary dataset (CPU, no cache) under a changed spec."""
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    def make(**changes: Any):
        return prepare(
            RunSpec(model=str(tiny_model_dir), dataset=str(canary_dataset), device="cpu", use_cache=False, **changes)
        )

    return make


@pytest.fixture
def make_context(tiny_prepared):
    """A CanaryContext on the tiny model against ``url``; settings as keyword arguments."""
    from evalsuite.canary.embedding.settings import CanarySettings
    from evalsuite.canary.runner import local_context

    made = []

    def make(url: str, prepared: Any = None, **kw: Any) -> Any:
        kw.setdefault("timeout", 10.0)
        ctx = local_context(CanarySettings(endpoint=url, **kw), prepared or tiny_prepared)
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        ctx.close()


# -- a raw HTTP server for faults a framework cannot produce ------------------------------------------
@pytest.fixture
def raw_server():
    """A fresh raw HTTP server on loopback (see RawServer); stopped after the test."""
    server = RawServer()
    try:
        yield server
    finally:
        server.stop()
