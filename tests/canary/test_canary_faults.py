"""`evalsuite canary` end to end against faulty servers on loopback: every fault ends in a verdict per
check, canary.json and report.md are written, the exit code is 0/1/2, nothing hangs, no traceback,
and the API key never appears in any form."""

from __future__ import annotations

import base64
import gzip
import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalsuite.cli import main

from .conftest import API_KEY_ENV, RawRequest, RawServer, embeddings_json, http_response

CHECKS = ["identity", "vector_agreement", "norm_agreement", "batch_invariance", "retrieval_agreement", "bad_input"]
HANG_LIMIT_S = 60.0
KEY = "sk-canary/echo+key_0123456789abcdef"  # "/" and "+": escaped, URL-encoded and base64 forms differ


def key_forms(key: str) -> list[str]:
    bearer = f"Bearer {key}"
    return [key, json.dumps(key)[1:-1].replace("/", "\\/"), "".join(f"\\u{ord(c):04x}" for c in key),
            urllib.parse.quote(key, safe=""), base64.b64encode(key.encode()).decode(),
            base64.b64encode(bearer.encode()).decode()[4:-4]]


def run_canary(url: str, model_dir: Path, dataset: Path, out: Path, capsys: Any, *extra: str) -> tuple[int, str]:
    """``evalsuite canary`` in a thread (a hang fails the test); its exit code and stdout + stderr."""
    argv = ["canary", "--endpoint", url, "--model", str(model_dir), "--dataset", str(dataset), "--device", "cpu",
            "--no-cache", "--out", str(out), "--endpoint-timeout", "5", *extra]
    result: list[Any] = []

    def call() -> None:
        try:
            result.append(main(argv))
        except BaseException as exc:  # noqa: BLE001 - whatever escapes is what the test checks
            result.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(HANG_LIMIT_S)
    if worker.is_alive():
        pytest.fail(f"evalsuite canary still ran after {HANG_LIMIT_S}s")
    captured = capsys.readouterr()
    if isinstance(result[0], BaseException):
        raise AssertionError(f"an exception escaped the canary: {result[0]!r}") from result[0]
    return result[0], captured.out + captured.err


def reported(out: Path) -> dict[str, Any]:
    """canary.json, after checking that both reports exist."""
    assert (out / "report.md").is_file(), "report.md was not written"
    return json.loads((out / "canary.json").read_text())


def assert_verdict_per_check(report: dict[str, Any], checks: list[str] = CHECKS) -> dict[str, dict[str, Any]]:
    verdicts = {v["check"]: v for v in report["verdicts"]}
    assert list(verdicts) == checks
    return verdicts


# -- a raw server with routes ---------------------------------------------------------------------
Reply = Callable[[RawRequest], Iterator[Any]]


def answer(body: Any, status: int = 200, **kw: Any) -> Reply:
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return lambda req: iter([http_response(data, status, **kw)])


def sound_embeddings(dim: int) -> Reply:
    def reply(req: RawRequest) -> Iterator[Any]:
        body = req.json()
        n = len(body["input"]) if isinstance(body.get("input"), list) else 1
        if n == 0:
            yield http_response(json.dumps({"error": {"message": "empty input"}}), 400)
            return
        yield http_response(json.dumps(embeddings_json(n, dim, encoding_format=body.get("encoding_format", "float"))))

    return reply


def serve(server: RawServer, dim: int, **routes: Reply) -> None:
    """Route by path: health, models, info, embeddings; sound answers unless given."""
    table = {"/health": routes.get("health", answer({"ok": True})),
             "/v1/models": routes.get("models", answer({"object": "list", "data": [{"id": "tiny-model"}]})),
             "/info": routes.get("info", answer({"error": "not found"}, 404)),
             "/v1/embeddings": routes.get("embeddings", sound_embeddings(dim))}

    def handler(req: RawRequest) -> Iterator[Any]:
        reply = table.get(req.path.split("?")[0], answer({"detail": "Not Found"}, 404))
        return reply(req)

    server.handler = handler


@pytest.fixture
def canary(tiny_model_dir, canary_dataset, tmp_path, capsys):
    def run(url: str, *extra: str) -> tuple[int, str, dict[str, Any]]:
        """Exit code, stdout + stderr + report.md, and canary.json (empty on exit 2)."""
        out = tmp_path / "out"
        rc, text = run_canary(url, tiny_model_dir, canary_dataset, out, capsys, *extra)
        assert "Traceback" not in text
        if rc == 2:
            assert not (out / "canary.json").exists()
            return rc, text, {}
        report = reported(out)
        return rc, text + (out / "report.md").read_text(), report

    return run


# -- 1. the key is checked before any request ------------------------------------------------------
@pytest.mark.parametrize("key, problem", [
    ("sk-caf\u00e9-0123456789", "a non-ASCII character at character 7"),
    ("sk-first-line\nInjected: zq-secret", "a line break at character 14"),
    ("sk-with zq-space-0123", "whitespace at character 8"),
])
def test_a_key_that_cannot_be_sent_exits_2_naming_the_variable_never_the_value(raw_server, canary, monkeypatch,
                                                                                 tiny_info, key, problem):
    serve(raw_server, tiny_info.hidden_size)
    monkeypatch.setenv(API_KEY_ENV, key)
    rc, text, _ = canary(raw_server.url, "--api-key-env", API_KEY_ENV)
    assert rc == 2
    assert f"the API key in ${API_KEY_ENV} holds {problem}" in text
    for part in key.split() + [key[:7]]:
        assert part not in text
    assert raw_server.requests == []  # refused before anything was sent


# -- 2. base64 in every probe ------------------------------------------------------------------------
def test_base64_against_a_faithful_server_passes_every_check(fault_server, canary):
    rc, text, report = canary(fault_server.url, "--encoding-format", "base64")
    assert rc == 0, text
    verdicts = assert_verdict_per_check(report)
    assert all(v["passed"] for v in verdicts.values()), text
    assert "empty list -> HTTP 422" in verdicts["bad_input"]["message"]
    assert "over-long input -> truncated like the contract" in verdicts["bad_input"]["message"]
    assert {b.get("encoding_format") for b in fault_server.bodies} == {"base64"}


# -- 3. the overall deadline -------------------------------------------------------------------------
def trickle(req: RawRequest) -> Iterator[Any]:
    yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    while True:
        yield b" "
        yield 0.2


def endless_continue(req: RawRequest) -> Iterator[Any]:
    while True:
        yield b"HTTP/1.1 100 Continue\r\n\r\n"
        yield 0.05


@pytest.mark.parametrize("stall", [trickle, endless_continue])
def test_the_overall_deadline_ends_the_canary_with_a_verdict_per_check(raw_server, canary, tiny_info, stall):
    serve(raw_server, tiny_info.hidden_size, embeddings=stall)
    t0 = time.monotonic()
    rc, text, report = canary(raw_server.url, "--endpoint-timeout", "60", "--canary-deadline", "2")
    assert time.monotonic() - t0 < 30
    assert rc == 1
    verdicts = assert_verdict_per_check(report)
    first = verdicts["identity"]["message"]
    assert first.startswith("identity: POST http://127.0.0.1:") and "/v1/embeddings" in first
    assert "the canary's overall deadline (--canary-deadline) (2s) ran out during this request" in first
    for name in CHECKS[1:]:
        assert verdicts[name]["passed"] is False
        assert "the canary's overall deadline (--canary-deadline) (2s) ran out" in verdicts[name]["message"]
    assert report["settings"]["deadline"] == 2.0
    assert len([r for r in raw_server.requests if r.path == "/v1/embeddings"]) == 1  # nothing sent after it


# -- 4. redaction and cut server text ----------------------------------------------------------------
@pytest.mark.parametrize("fault", ["model_field", "error_body", "huge_model"])
def test_echoed_keys_and_huge_server_text_never_reach_the_output(fault_server, canary, monkeypatch, fault):
    monkeypatch.setenv(API_KEY_ENV, KEY)
    fault_server.api_key = KEY
    if fault == "model_field":
        fault_server.echo_auth = True
    elif fault == "error_body":
        fault_server.echo_auth_status = 400
    else:
        fault_server.response_model = "m" * 1_000_000
    rc, text, report = canary(fault_server.url, "--api-key-env", API_KEY_ENV)
    assert rc == 1
    verdicts = assert_verdict_per_check(report, CHECKS + ["auth"])
    for blob in (text, json.dumps(report)):  # stdout, stderr, report.md; canary.json
        for form in key_forms(KEY):
            assert form not in blob, f"key leaked as {form!r}"
        assert "m" * 300 not in blob
    identity = verdicts["identity"]["message"]
    if fault == "model_field":
        assert "response names model 'Bearer ***'" in identity
    elif fault == "error_body":
        assert "HTTP 400: " in identity and "bad request from Bearer ***" in identity
    else:
        assert "response names model 'mmmm" in identity and "more)" in identity
    assert len(text) < 40_000 and len(json.dumps(report)) < 40_000
