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

from evalsuite.canary.embedding.registry import LABELS
from evalsuite.cli import main

from .conftest import API_KEY_ENV, canary_argv, checks_but
from .raw_server import RawRequest, RawServer, embeddings_json, endless_continue, http_response, trickle_body

CANARY_CHECKS = checks_but("matryoshka", "auth")
HANG_LIMIT_S = 60.0
KEY = "sk-canary/echo+key_0123456789abcdef"  # "/" and "+": escaped, URL-encoded and base64 forms differ


def key_forms(key: str) -> list[str]:
    bearer = f"Bearer {key}"
    return [
        key,
        json.dumps(key)[1:-1].replace("/", "\\/"),
        "".join(f"\\u{ord(c):04x}" for c in key),
        urllib.parse.quote(key, safe=""),
        base64.b64encode(key.encode()).decode(),
        base64.b64encode(bearer.encode()).decode()[4:-4],
    ]


def run_canary(url: str, model_dir: Path, dataset: Path, out: Path, capsys: Any, *extra: str) -> tuple[int, str]:
    """``evalsuite canary`` in a thread (a hang fails the test); its exit code and stdout + stderr."""
    argv = canary_argv(url, model_dir, dataset, out, "--endpoint-timeout", "5", *extra)
    result: list[Any] = []

    def call() -> None:
        try:
            result.append(main(argv))
        except BaseException as exc:  # whatever escapes is what the test checks
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


def assert_verdict_per_check(report: dict[str, Any], checks: list[str] = CANARY_CHECKS) -> dict[str, dict[str, Any]]:
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
    table = {
        "/health": routes.get("health", answer({"ok": True})),
        "/v1/models": routes.get("models", answer({"object": "list", "data": [{"id": "tiny-model"}]})),
        "/info": routes.get("info", answer({"error": "not found"}, 404)),
        "/v1/embeddings": routes.get("embeddings", sound_embeddings(dim)),
    }

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
@pytest.mark.parametrize(
    "key, problem",
    [
        ("sk-caf\u00e9-0123456789", "a non-ASCII character at character 7"),
        ("sk-first-line\nInjected: zq-secret", "a line break at character 14"),
        ("sk-with zq-space-0123", "whitespace at character 8"),
    ],
)
def test_a_key_that_cannot_be_sent_exits_2_naming_the_variable_never_the_value(
    raw_server, canary, monkeypatch, tiny_info, key, problem
):
    serve(raw_server, tiny_info.hidden_size)
    monkeypatch.setenv(API_KEY_ENV, key)
    rc, text, _ = canary(raw_server.url, "--api-key-env", API_KEY_ENV)
    assert rc == 2
    assert f"the API key in ${API_KEY_ENV} holds {problem}" in text
    for part in [*key.split(), key[:7]]:
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
@pytest.mark.parametrize("stall", [trickle_body, endless_continue])
def test_the_overall_deadline_ends_the_canary_with_a_verdict_per_check(raw_server, canary, tiny_info, stall):
    serve(raw_server, tiny_info.hidden_size, embeddings=stall)
    t0 = time.monotonic()
    rc, text, report = canary(raw_server.url, "--endpoint-timeout", "60", "--canary-deadline", "2")
    assert time.monotonic() - t0 < 30
    assert rc == 1, text
    verdicts = assert_verdict_per_check(report)
    first = verdicts["identity"]["message"]
    assert first.startswith("identity: POST http://127.0.0.1:") and "/v1/embeddings" in first
    assert "the canary's overall deadline (--canary-deadline) (2s) ran out during this request" in first
    for name in CANARY_CHECKS[1:]:
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
    verdicts = assert_verdict_per_check(report, [*CANARY_CHECKS, "auth"])
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


# -- 5. hints that point the right way ---------------------------------------------------------------
def test_a_server_truncating_shorter_than_the_contract_is_named_as_truncation(fault_server, make_context):
    from evalsuite.canary.embedding.registry import run_check

    fault_server.max_length = 16  # the contract says 64
    v = run_check("vector_agreement", make_context(fault_server.url))
    assert v.passed is False
    # the canary set's longest text encoded exactly has 14 tokens, its shortest changed one 17 (the cut is at 16)
    assert "the server seems to truncate at ~14-16 < max_length 64" in v.message, v.message
    assert "prefix" not in v.message
    low, high = v.details["truncation"]["cut_at_tokens"]
    assert (low, high) == (14, 16) and low <= fault_server.max_length <= high
    tokens = v.details["truncation"]["tokens"]
    assert tokens["d11"] == 4 and tokens["d_long"] > 40  # "ok" is [CLS] o ##k [SEP]; d_long is ~80% of 64


def mid_body_reset(req: RawRequest) -> Iterator[Any]:
    yield b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"data": ['
    yield 0.05
    yield "reset"


@pytest.mark.parametrize(
    "reply, needles",
    [
        (
            answer({"error": {"message": "CUDA out of memory: tried to allocate 2 GiB", "type": "server_error"}}),
            [
                '/v1/embeddings (batch 1 of 1: 1 input(s), first item #0 "identity probe"): HTTP 200: the server '
                "answered with an error instead of vectors: CUDA out of memory: tried to allocate 2 GiB"
            ],
        ),
        (
            answer("<html><body><h1>502 Bad Gateway</h1> nginx</body></html>", content_type="text/html; charset=utf-8"),
            ["HTTP 200 (text/html; charset=utf-8) is not JSON", "<html><body><h1>502 Bad Gateway</h1> nginx"],
        ),
        (mid_body_reset, ["the connection dropped mid-response (HTTP 200 headers received, the body incomplete"]),
        (
            answer("", 307, headers={"Location": "http://10.1.2.3:8080/v1/embeddings"}),
            ["HTTP 307 redirect to 'http://10.1.2.3:8080/v1/embeddings'", "redirects are not followed"],
        ),
    ],
    ids=["error-in-200", "html-200", "reset-mid-body", "redirect-307"],
)
def test_an_embeddings_fault_is_named_for_what_it_is(raw_server, canary, tiny_info, reply, needles):
    serve(raw_server, tiny_info.hidden_size, embeddings=reply)
    rc, text, report = canary(raw_server.url)
    assert rc == 1
    verdicts = assert_verdict_per_check(report)
    identity = verdicts["identity"]["message"]
    for needle in needles:
        assert needle in identity, identity
    assert "is the server up and the URL right?" not in text
    assert all(v["passed"] is False for v in verdicts.values())


# -- 6. every malformed reply ends in verdicts -----------------------------------------------------------
def embeddings_with(change: Callable[[dict[str, Any]], Any], dim: int = 32) -> Reply:
    """Sound embeddings with ``change`` applied to the JSON (its return value, if any, replaces it)."""

    def reply(req: RawRequest) -> Iterator[Any]:
        body = req.json()
        n = len(body["input"]) if isinstance(body.get("input"), list) else 1
        obj = embeddings_json(max(n, 1), dim, encoding_format=body.get("encoding_format", "float"))
        new = change(obj)
        yield http_response(json.dumps(obj if new is None else new))

    return reply


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        target: Any = obj
        *head, last = path.split(".")
        for part in head:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[int(last) if isinstance(target, list) else last] = value

    return change


MODELS_404 = answer({"detail": "Not Found"}, 404)
MALFORMED: dict[str, dict[str, Reply]] = {
    "models-json-list": {"models": answer([{"id": "tiny-model"}])},
    "models-data-null": {"models": answer({"data": None})},
    "models-data-empty": {"models": answer({"object": "list", "data": []})},
    "models-data-string": {"models": answer({"data": "tiny-model"})},
    "models-entry-int": {"models": answer({"data": [1]})},
    "models-id-int": {"models": answer({"data": [{"id": 5}]})},
    "models-id-huge": {"models": answer({"data": [{"id": "m" * 100_000}]})},
    "models-not-json": {"models": answer("models: tiny-model", content_type="text/plain")},
    "models-deep": {"models": answer("[" * 100_000 + "]" * 100_000)},
    "models-error-200": {"models": answer({"error": {"message": "model registry unavailable"}})},
    "models-500": {"models": answer("Internal Server Error", 500, content_type="text/plain")},
    "info-json-list": {"models": MODELS_404, "info": answer([1, 2])},
    "info-model-null": {"models": MODELS_404, "info": answer({"model_id": None})},
    "info-empty": {"models": MODELS_404, "info": answer({})},
    "info-404": {"models": MODELS_404},
    "health-garbage": {
        "health": answer(b"\xff\xfe", 200, content_type="application/octet-stream"),
        "embeddings": embeddings_with(_set("data.0.index", 0.0)),
    },
    "index-float": {"embeddings": embeddings_with(_set("data.0.index", 0.0))},
    "index-bool": {"embeddings": embeddings_with(_set("data.0.index", True))},
    "index-none": {"embeddings": embeddings_with(_set("data.0.index", None))},
    "data-empty": {"embeddings": embeddings_with(_set("data", []))},
    "data-object": {"embeddings": embeddings_with(_set("data", {"0": [1.0]}))},
    "entry-list": {"embeddings": embeddings_with(_set("data.0", [1.0, 0.0]))},
    "embedding-null": {"embeddings": embeddings_with(_set("data.0.embedding", None))},
    "embedding-object": {"embeddings": embeddings_with(_set("data.0.embedding", {"values": [1.0]}))},
    "embedding-strings": {"embeddings": embeddings_with(_set("data.0.embedding", ["1.0"] * 32))},
    "embedding-nested": {"embeddings": embeddings_with(_set("data.0.embedding", [[1.0]] * 32))},
    "model-list": {"embeddings": embeddings_with(_set("model", ["tiny-model"]))},
    "body-null": {"embeddings": lambda req: iter([http_response("null")])},
    "body-list": {"embeddings": embeddings_with(lambda obj: obj["data"])},
    "huge-int": {
        "embeddings": lambda req: iter(
            [
                http_response(
                    '{"object": "list", "model": "tiny-model", "data": [{"index": 0, "embedding": [1'
                    + "0" * 400
                    + "]}]}"
                )
            ]
        )
    },
    "fake-gzip": {
        "embeddings": lambda req: iter(
            [http_response(json.dumps(embeddings_json(1, 32)), headers={"Content-Encoding": "gzip"})]
        )
    },
    "double-gzip-bomb": {
        "embeddings": lambda req: iter(
            [http_response(gzip.compress(gzip.compress(b" " * 50_000_000)), headers={"Content-Encoding": "gzip, gzip"})]
        )
    },
    "short-body": {"embeddings": lambda req: iter([http_response(b'{"data": [', headers={"Content-Length": "500"})])},
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_reply_ends_in_a_failed_verdict_per_check_and_reports(raw_server, canary, tiny_info, case):
    serve(raw_server, tiny_info.hidden_size, **MALFORMED[case])
    rc, text, report = canary(raw_server.url, "--endpoint-batch-size", "64")
    assert rc == 1, text
    verdicts = assert_verdict_per_check(report)
    assert verdicts["identity"]["passed"] is False
    for v in verdicts.values():
        assert v["message"].startswith(LABELS[v["check"]] + ": ")
        assert "internal error" not in v["message"]
        assert len(v["message"]) < 2000
    assert "m" * 300 not in text and "0" * 300 not in text


@pytest.mark.parametrize("case", ["embedding-null", "data-empty", "body-list"])
def test_malformed_replies_end_in_verdicts_for_matryoshka_and_auth_too(
    raw_server, canary, tiny_info, monkeypatch, case
):
    serve(raw_server, tiny_info.hidden_size, **MALFORMED[case])
    monkeypatch.setenv(API_KEY_ENV, KEY)
    rc, text, report = canary(raw_server.url, "--canary-dimensions", "16", "--api-key-env", API_KEY_ENV)
    assert rc == 1, text
    verdicts = assert_verdict_per_check(report, [*CANARY_CHECKS, "matryoshka", "auth"])
    assert verdicts["matryoshka"]["passed"] is False and verdicts["auth"]["passed"] is False
    assert "internal error" not in text


def test_an_impossible_dimension_is_a_usage_error_before_any_request(raw_server, canary, tiny_info):
    serve(raw_server, tiny_info.hidden_size)
    rc, text, _ = canary(raw_server.url, "--canary-dimensions", "64")
    assert rc == 2 and "--canary-dimensions 64 exceeds the model's output dimension 32" in text
    assert raw_server.requests == []


def test_a_bug_in_a_check_still_ends_in_a_verdict_and_reports(fault_server, canary, monkeypatch):
    import dataclasses

    from evalsuite.canary.embedding import registry

    def broken(ctx: Any) -> Any:
        raise KeyError("data")  # what an unchecked server reply used to raise

    checks = tuple(
        dataclasses.replace(c, run=broken) if c.name == "norm_agreement" else c for c in registry.CANARY_CHECKS
    )
    monkeypatch.setattr(registry, "CANARY_CHECKS", checks)
    rc, _, report = canary(fault_server.url)
    assert rc == 1
    verdicts = assert_verdict_per_check(report)
    assert verdicts["norm_agreement"]["message"] == (
        "norm agreement: internal error in the check (KeyError: 'data'); please report it with canary.json"
    )
    assert all(v["passed"] for name, v in verdicts.items() if name != "norm_agreement")


def test_long_model_lists_are_cut_in_messages_and_reports(fault_server, canary):
    fault_server.listed = ["m" * 1000] + [f"model-{i}" for i in range(30)]
    rc, text, report = canary(fault_server.url, "--served-model", "prod-embed")
    assert rc == 1
    identity = assert_verdict_per_check(report)["identity"]
    assert "served model 'prod-embed' is not listed by /v1/models (it lists 'mmm" in identity["message"]
    assert "'model-3' and 26 more); pass the served name with --served-model" in identity["message"]
    assert identity["details"]["listed_count"] == 31 and len(identity["details"]["listed"]) == 20
    assert "m" * 300 not in text + json.dumps(report)


def test_verdicts_and_reports_are_redacted_whatever_built_them(tiny_prepared, tmp_path):
    from evalsuite.canary.embedding.settings import CanarySettings
    from evalsuite.canary.report import write_canary_reports
    from evalsuite.canary.runner import CanaryOutcome
    from evalsuite.checks import CheckOutcome
    from evalsuite.encode.secret import Secret

    Secret(KEY)  # the key the process holds (read from the environment in a real run)
    forms = key_forms(KEY)
    echoed = [*forms[:5], base64.b64encode(f"Bearer {KEY}".encode()).decode()]  # what a server may send back
    v = CheckOutcome("identity", False, "identity: " + " ".join(echoed), {"echo": [echoed[1], {echoed[4]: echoed[5]}]})
    blob = v.message + json.dumps(v.details)
    assert all(form not in blob for form in forms) and blob.count("***") >= len(echoed) + 3
    raw = CheckOutcome("auth", True, "auth: fine")
    object.__setattr__(raw, "message", "auth: " + forms[3])  # a message that skipped the verdict's redaction
    outcome = CanaryOutcome(
        settings=CanarySettings(endpoint="http://127.0.0.1:9/v1"),
        contract=tiny_prepared.contract.to_dict(),
        dataset=tiny_prepared.dataset.identity.to_dict(),
        served_model="tiny-model",
        verdicts=(v, raw),
    )
    paths = write_canary_reports(outcome, tmp_path)
    for path in paths.values():
        text = path.read_text()
        assert all(form not in text for form in forms), path
    assert json.loads(paths["json"].read_text())["verdicts"][1]["message"] == "auth: ***"


@pytest.mark.parametrize("status", [429, 408])
def test_rate_limiting_or_a_timeout_is_not_a_refusal_of_the_input(fault_server, make_context, status):
    from evalsuite.canary.embedding.registry import run_check

    fault_server.empty_list_status = status  # after the client's retries
    v = run_check("bad_input", make_context(fault_server.url, max_retries=1, backoff=0.01))
    assert v.passed is False
    assert f"empty list -> HTTP {status} ([{{'msg': 'empty'}}]), expected a 4xx refusing it" in v.message
    assert v.message.count("->") == 1  # only the empty list failed
    assert v.details["empty_string"] == 200 and v.details["empty_list"] == status


def test_an_engine_error_on_an_empty_list_passes_with_a_warning(fault_server, make_context):
    """llama-cpp-python answers an empty list with HTTP 500 and an error object, and keeps serving: nothing came
    back, so the check passes and says it. Bugs: any 5xx accepted (a gateway's 502 is no answer from the engine),
    a bare 500 accepted (no error object: nothing says the input was refused), the warning dropped."""
    from evalsuite.canary.embedding.registry import run_check

    fault_server.empty_list_status = 500
    fault_server.empty_list_body = {"error": {"message": "llama_decode returned -1", "type": "internal_server_error"}}
    v = run_check("bad_input", make_context(fault_server.url, max_retries=0))
    assert v.passed is True, v.message
    assert "warning: empty list -> HTTP 500 (llama_decode returned -1): the engine fails on an empty batch" in v.message
    assert v.details["empty_list"] == 500 and len(v.details["warnings"]) == 1


@pytest.mark.parametrize(
    ("status", "body"), [(500, "Internal Server Error"), (502, {"error": {"message": "bad gateway"}})]
)
def test_an_empty_list_answered_by_no_error_object_or_a_gateway_fails(fault_server, make_context, status, body):
    from evalsuite.canary.embedding.registry import run_check

    fault_server.empty_list_status = status
    fault_server.empty_list_body = body
    v = run_check("bad_input", make_context(fault_server.url, max_retries=0))
    assert v.passed is False
    assert f"empty list -> HTTP {status}" in v.message and "expected a 4xx refusing it" in v.message
    assert "warnings" not in v.details
