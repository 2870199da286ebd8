"""The endpoint client against misbehaving servers on loopback (a raw socket server, real HTTP):
every fault ends within its deadline in a typed EndpointError that says what happened, memory
stays bounded, server text is cut, and the API key never appears in any form."""

from __future__ import annotations

import base64
import json
import threading
import time
import tracemalloc
import urllib.parse
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from evalsuite.base.errors import EndpointError, SpecError
from evalsuite.encode.endpoint import (
    Deadline,
    EndpointConfig,
    EndpointConnectionDropped,
    EndpointDeadlineExceeded,
    EndpointEncoder,
    EndpointHTTPError,
    EndpointRedirect,
    EndpointTimeout,
    EndpointUnreachable,
    ResponseDecodingError,
    ResponseTooLarge,
    Secret,
)
from evalsuite.encode.response import (
    Expectation,
    ModelMismatch,
    NonFiniteVector,
    ResponseFormatError,
    ServerReportedError,
    parse_embeddings,
)

from .raw_server import RawServer, embeddings_json, endless_continue, http_response, trickle_body

KEY = "sk-fault/key+test_0123456789abcdef"  # a "/" and a "+" so that escaped and encoded forms differ
DIM = 8
TEXTS = ["alpha", "beta", "gamma", "delta"]
HANG_LIMIT_S = 20.0


def key_forms(key: str = KEY) -> list[str]:
    return [
        key,
        json.dumps(key)[1:-1].replace("/", "\\/"),
        "".join(f"\\u{ord(c):04x}" for c in key),
        urllib.parse.quote(key, safe=""),
        base64.b64encode(key.encode()).decode(),
        base64.b64encode(f"Bearer {key}".encode()).decode()[4:-4],
    ]


def assert_clean(exc: BaseException, limit: int = 1500) -> None:
    """No form of the key in the error (message, args, repr), and the message stays short."""
    for text in (str(exc), repr(exc), repr(exc.args)):
        for form in key_forms():
            assert form not in text, f"key leaked as {form!r}"
    assert len(str(exc)) <= limit, f"message of {len(str(exc))} chars"
    assert exc.__cause__ is None


def client(url: str, **kw: Any) -> EndpointEncoder:
    kw.setdefault("timeout", 1.0)
    kw.setdefault("backoff", 0.01)
    kw.setdefault("api_key", Secret(KEY))
    deadline = kw.pop("deadline", None)
    return EndpointEncoder(
        EndpointConfig(url=url, model="tiny-model", **kw),
        Expectation(dim=DIM, normalized=True, models=frozenset({"tiny-model"})),
        deadline=deadline,
    )


def fail(
    server: RawServer, handler: Any, error: type[Exception] = EndpointError, texts: list[str] = TEXTS, **kw: Any
) -> tuple[Exception, float]:
    server.handler = handler
    raised: list[BaseException] = []

    def call() -> None:
        try:
            with client(server.url, **kw) as c:
                c.embed(texts)
        except BaseException as exc:
            raised.append(exc)

    t0 = time.monotonic()
    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(HANG_LIMIT_S)  # a hang fails the test instead of stalling the run
    elapsed = time.monotonic() - t0
    if worker.is_alive():
        server.stop()
        pytest.fail(f"the client still waited after {HANG_LIMIT_S}s")
    assert raised, "the fault was accepted silently"
    exc = raised[0]
    assert isinstance(exc, error), f"{type(exc).__name__}: {exc}"
    assert_clean(exc)
    return exc, elapsed  # type: ignore[return-value]


def ok_json(req: Any, n: int = len(TEXTS), **kw: Any) -> bytes:
    return http_response(json.dumps(embeddings_json(n, DIM, **kw)))


# -- 1. a total deadline per request, and an overall one ------------------------------------------
def trickle_headers(req: Any) -> Iterator[Any]:
    yield b"HTTP/1.1 200 OK\r\nX-Slow: "
    while True:
        yield b"a"
        yield 0.2


def silent_after_headers(req: Any) -> Iterator[Any]:
    yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n[1.0,\r\n"
    yield 60.0


@pytest.mark.parametrize(
    "handler, phase",
    [
        (trickle_body, "HTTP 200 headers received, the body incomplete"),
        (trickle_headers, "no response headers"),
        (endless_continue, "no response headers"),
        (silent_after_headers, "HTTP 200 headers received"),
    ],
)
def test_a_stalled_request_ends_within_its_total_deadline_naming_the_batch(raw_server, handler, phase):
    exc, elapsed = fail(raw_server, handler, EndpointTimeout, timeout=1.0)
    assert elapsed < 2.5, f"took {elapsed:.1f}s for a 1s deadline"
    assert "no answer within 1s" in str(exc) and phase in str(exc)
    assert "batch 1 of 1: 4 input(s)" in str(exc)
    assert len(raw_server.requests) == 1  # a stall is not retried


def test_stalled_concurrent_batches_all_end_within_the_deadline(raw_server):
    texts = [f"text {i}" for i in range(8)]
    exc, elapsed = fail(
        raw_server, trickle_body, EndpointTimeout, texts=texts, timeout=1.0, batch_size=1, concurrency=4
    )
    assert elapsed < 2.5  # the four in flight end together; the four queued are never sent
    assert "batch " in str(exc) and "of 8: 1 input(s)" in str(exc)
    assert len(raw_server.requests) == 4


@pytest.mark.parametrize("handler", [trickle_body, silent_after_headers])
def test_the_overall_deadline_ends_a_request_before_its_own_timeout(raw_server, handler):
    # silent after the headers: only the socket timeout clamped to the deadline (the smaller of the two) ends it
    deadline = Deadline.after(1.0, "the canary's overall deadline")
    exc, elapsed = fail(raw_server, handler, EndpointDeadlineExceeded, timeout=30.0, deadline=deadline)
    assert elapsed < 2.5
    assert "the canary's overall deadline (1s) ran out during this request" in str(exc)
    assert "batch 1 of 1" in str(exc)
    # once it has run out, nothing more is sent
    before = len(raw_server.requests)
    with client(raw_server.url, deadline=deadline) as c, pytest.raises(EndpointDeadlineExceeded, match="not sent"):
        c.embed(TEXTS)
    assert len(raw_server.requests) == before


def test_retries_stop_at_the_overall_deadline(raw_server):
    def busy(req: Any) -> Iterator[Any]:
        yield http_response('{"error": {"message": "busy"}}', 503, headers={"Retry-After": "0.4"})

    deadline = Deadline.after(1.0)
    exc, elapsed = fail(raw_server, busy, EndpointDeadlineExceeded, max_retries=50, max_backoff=0.4, deadline=deadline)
    assert elapsed < 1.5 and "before the next retry" in str(exc)
    assert 2 <= len(raw_server.requests) < 10


# -- 2. bounded responses -------------------------------------------------------------------------
def _bomb(wbits: int, mib: int = 64) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, wbits)
    zeros = b" " * (1 << 20)
    return b"".join(comp.compress(zeros) for _ in range(mib)) + comp.flush()


@pytest.mark.parametrize("coding, wbits", [("gzip", 31), ("deflate", 15), ("deflate", -15)])
def test_a_compression_bomb_is_refused_while_decoding_with_bounded_memory(raw_server, coding, wbits):
    bomb = _bomb(wbits)
    assert len(bomb) < 200_000
    tracemalloc.start()
    try:
        exc, elapsed = fail(
            raw_server, lambda req: [http_response(bomb, headers={"Content-Encoding": coding})], ResponseTooLarge
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "decodes to more than" in str(exc) and "max_response_bytes" in str(exc) and elapsed < 5.0
    assert peak < 24 << 20, f"peak {peak >> 20} MiB while refusing a 64 MiB bomb"


def test_an_endless_body_is_refused_at_the_cap_with_bounded_memory(raw_server):
    def endless(req: Any) -> Iterator[Any]:
        yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        chunk = b"0.1," * 16384
        while True:
            yield b"%x\r\n%s\r\n" % (len(chunk), chunk)

    tracemalloc.start()
    try:
        exc, elapsed = fail(raw_server, endless, ResponseTooLarge, timeout=10.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "is more than" in str(exc) and elapsed < 8.0
    assert peak < 24 << 20


def test_a_declared_oversize_body_is_refused_without_reading_it(raw_server):
    def huge(req: Any) -> Iterator[Any]:
        yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 300000000\r\n\r\n{"
        yield 60.0

    exc, elapsed = fail(raw_server, huge, ResponseTooLarge, timeout=10.0)
    assert elapsed < 1.0 and "declares a body of 300000000 bytes" in str(exc)


def test_the_cap_is_overridable_and_sound_large_answers_pass(raw_server):
    rng = np.random.default_rng(0)
    n, dim = 64, 1024
    vecs = rng.standard_normal((n, dim))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    body = json.dumps(
        {"data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)], "model": "tiny-model"}
    )
    raw_server.handler = lambda req: [http_response(body)]
    expect = Expectation(dim=dim, normalized=True, models=frozenset({"tiny-model"}))
    with EndpointEncoder(EndpointConfig(url=raw_server.url, batch_size=n, timeout=10.0), expect) as c:
        got = c.embed([f"t{i}" for i in range(n)], sort_by_length=False)
    np.testing.assert_allclose(got, vecs, atol=1e-6)
    with (
        EndpointEncoder(
            EndpointConfig(url=raw_server.url, batch_size=n, max_response_bytes=len(body) - 1, timeout=10.0), expect
        ) as c,
        pytest.raises(ResponseTooLarge),
    ):
        c.embed([f"t{i}" for i in range(n)])


@pytest.mark.parametrize("coding, wbits", [("gzip", 31), ("deflate", 15), ("deflate", -15), ("gzip, identity", 31)])
def test_sound_compressed_answers_are_decoded(raw_server, coding, wbits):
    body = json.dumps(embeddings_json(len(TEXTS), DIM)).encode()
    comp = zlib.compressobj(6, zlib.DEFLATED, wbits)
    packed = comp.compress(body) + comp.flush()
    raw_server.handler = lambda req: [http_response(packed, headers={"Content-Encoding": coding})]
    with client(raw_server.url) as c:
        got = c.embed(TEXTS, sort_by_length=False)
    np.testing.assert_array_equal(got, np.eye(DIM, dtype=np.float32)[: len(TEXTS)])
    assert raw_server.requests[0].headers["accept-encoding"] == "gzip, deflate"


@pytest.mark.parametrize(
    "coding, body, needle",
    [
        ("gzip", b'{"data": []}', "says Content-Encoding 'gzip' but the body does not decode"),
        ("br", b"\x1b\x03\x00", "Content-Encoding 'br' is not supported"),
        ("gzip", zlib.compress(b'{"data": [1, 2, 3]}', wbits=31)[:-12], "does not decode"),  # cut short
    ],
)
def test_a_body_that_does_not_decode_as_declared_is_named(raw_server, coding, body, needle):
    exc, _ = fail(
        raw_server, lambda req: [http_response(body, headers={"Content-Encoding": coding})], ResponseDecodingError
    )
    assert needle in str(exc) and "HTTP 200" in str(exc)


def test_long_server_text_is_cut_everywhere(raw_server):
    long_model = "m" * 1_000_000
    exc, _ = fail(raw_server, lambda req: [ok_json(req, model=long_model)], ModelMismatch)
    assert "…(" in str(exc) and len(str(exc)) < 800
    page = "<html><body>" + "Bad gateway " * 100_000 + "</body></html>"
    exc, _ = fail(raw_server, lambda req: [http_response(page, 400, "text/html")], EndpointHTTPError)
    assert "HTTP 400: text/html: <html><body>Bad gateway" in str(exc) and "more)" in str(exc)
    assert len(str(exc)) < 800


# -- 3. every byte validated ----------------------------------------------------------------------
def _with_vector(value: str) -> Any:
    body = json.dumps(embeddings_json(len(TEXTS), DIM)).replace("[1.0, 0.0", "[" + value + ", 0.0", 1)
    return lambda req: [http_response(body)]


@pytest.mark.parametrize(
    "handler, error, needles",
    [
        (_with_vector("1" + "0" * 400), NonFiniteVector, ["integer of 401 digits", "too large for a float"]),
        (_with_vector("1" + "0" * 5000), ResponseFormatError, ["is not JSON", "HTTP 200"]),
        (lambda req: [http_response("[" * 100_000 + "]" * 100_000)], ResponseFormatError, ["nested too deeply"]),
        (
            lambda req: [http_response('{"data": ' + "[" * 500 + "]" * 500 + ', "model": "tiny-model"}')],
            ResponseFormatError,
            ["data[0] is list, not an object"],
        ),
        (
            lambda req: [http_response('{"data": [], "model": ' + "[" * 500 + "]" * 500 + "}")],
            ModelMismatch,
            ["no 'model' string (got [[[...]]])"],
        ),
        (
            lambda req: [http_response("<html><h1>Welcome to nginx</h1></html>", content_type="text/html")],
            ResponseFormatError,
            ["HTTP 200 (text/html) is not JSON", "<html><h1>Welcome to nginx"],
        ),
        (
            lambda req: [http_response(b"\xff\xfe\x00garbage", content_type="application/json")],
            ResponseFormatError,
            ["is not JSON"],
        ),
        (lambda req: [http_response("", content_type="")], ResponseFormatError, ["an empty body"]),
        (
            lambda req: [http_response('{"error": {"message": "CUDA out of memory", "code": 500}}')],
            ServerReportedError,
            ["error instead of vectors: CUDA out of memory"],
        ),
        (lambda req: [http_response('{"data": null, "model": "tiny-model"}')], ResponseFormatError, ["'data' is None"]),
        (
            lambda req: [http_response('{"data": [1, 2, 3, 4], "model": "tiny-model"}')],
            ResponseFormatError,
            ["data[0] is int"],
        ),
    ],
)
def test_malformed_answers_are_typed_errors(raw_server, handler, error, needles):
    exc, _ = fail(raw_server, handler, error)
    for needle in needles:
        assert needle in str(exc), str(exc)


@pytest.mark.parametrize(
    "body, needle",
    [
        ('[{"id": "tiny-model"}]', "is a JSON list, expected an object"),
        ('{"data": null}', "'data' is None, expected a list"),
        ('{"data": ["tiny-model"]}', "data[0] is 'tiny-model', expected an object"),
        ('{"data": [{"id": 7}]}', "data[0].id is 7, expected a model name"),
        ('{"data": [{"id": "' + "x" * 5000 + '"}]}', "5000 characters long"),
        ('{"error": {"message": "models are loading"}}', "instead of the model list: models are loading"),
        ("not json", "is not JSON"),
    ],
)
def test_malformed_model_lists_are_typed_errors(raw_server, body, needle):
    raw_server.handler = lambda req: [http_response(body)]
    with client(raw_server.url) as c, pytest.raises(ResponseFormatError) as info:
        c.get_json(c.config.models_url)
    assert needle in str(info.value) and "GET " in str(info.value)
    assert_clean(info.value)


def test_a_connection_reset_mid_body_is_named_and_retried(raw_server):
    def reset(req: Any) -> Iterator[Any]:
        yield b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"data": ['
        yield 0.05
        yield "reset"

    exc, elapsed = fail(raw_server, reset, EndpointConnectionDropped)
    assert elapsed < 3.0
    assert "dropped mid-response" in str(exc) and "HTTP 200 headers received" in str(exc)
    assert "is the server up" not in str(exc)
    assert len(raw_server.requests) == 4


def test_a_close_without_answer_is_unreachable_after_retries(raw_server):
    exc, _ = fail(raw_server, lambda req: ["reset"], EndpointUnreachable)
    assert not isinstance(exc, EndpointConnectionDropped) and "4 attempt(s)" in str(exc)


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirects_are_named_and_never_followed_so_the_key_stays_home(raw_server, status):
    other = RawServer()
    try:
        other.handler = lambda req: [ok_json(req)]
        target = other.url + "/embeddings"
        exc, _ = fail(
            raw_server, lambda req: [http_response("", status, headers={"Location": target})], EndpointRedirect
        )
    finally:
        other.stop()
    assert f"HTTP {status} redirect to '{target}'" in str(exc) and "not followed" in str(exc)
    assert other.requests == []
    assert len(raw_server.requests) == 1
    assert raw_server.requests[0].headers["authorization"] == f"Bearer {KEY}"


# -- 4. the API key -------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["sk-with\nnewline", "sk with space", "sk-caf\u00e9", "sk-\x00nul"])
def test_a_key_that_cannot_be_sent_is_refused_before_any_request(raw_server, bad):
    with pytest.raises(SpecError) as info:
        client(raw_server.url, api_key=Secret(bad, source="MY_KEY_ENV"))
    assert "$MY_KEY_ENV" in str(info.value) and bad not in str(info.value)
    assert raw_server.requests == []


@pytest.mark.parametrize("form", range(6))
def test_the_key_is_redacted_from_error_bodies_in_every_form(raw_server, form):
    echoed = key_forms()[form] if form != 5 else base64.b64encode(f"Bearer {KEY}".encode()).decode()
    body = json.dumps({"error": {"message": f"invalid key {echoed} for this model"}}).replace(
        json.dumps(echoed)[1:-1], echoed
    )
    exc, _ = fail(raw_server, lambda req: [http_response(body, 401)], EndpointHTTPError)
    assert ("invalid key ***" if form < 5 else "***") in str(exc) and "for this model" in str(exc)


def test_an_echoed_key_in_the_model_field_never_reaches_the_message(fault_server):
    fault_server.echo_auth = True
    expect = Expectation(dim=fault_server.hidden, normalized=True, models=frozenset({fault_server.model}))
    with (
        EndpointEncoder(
            EndpointConfig(url=fault_server.url, model=fault_server.model, api_key=Secret(KEY)), expect
        ) as c,
        pytest.raises(ModelMismatch) as info,
    ):
        c.embed(TEXTS)
    assert fault_server.headers[-1]["Authorization"] == f"Bearer {KEY}"
    assert "'Bearer ***'" in str(info.value)
    assert_clean(info.value)


# -- 5. the configured encoding in every parse helper ---------------------------------------------
def test_probes_parse_in_the_configured_encoding(fault_server):
    expect = Expectation(dim=fault_server.hidden, normalized=True, models=frozenset({fault_server.model}))
    config = EndpointConfig(url=fault_server.url, model=fault_server.model, encoding_format="base64")
    with EndpointEncoder(config, expect) as c:
        resp = c.request("POST", c.config.embeddings_url, json=c.payload([""]))
        got = c.parse_response(resp, ['item empty-string ""'])
        again = parse_embeddings(resp.json(), ['item empty-string ""'], c.expect)  # what probes call today
    assert fault_server.bodies[-1]["encoding_format"] == "base64"
    np.testing.assert_allclose(got, fault_server.expected([""]), atol=1e-6)
    np.testing.assert_array_equal(got, again)


@pytest.mark.parametrize(
    "handler, error, needle",
    [
        (lambda req: [b"SSH-2.0-OpenSSH_9.6\r\n\r\n", 1.0], EndpointUnreachable, "not valid HTTP/1.1"),
        (
            lambda req: [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],
            EndpointConnectionDropped,
            "broke HTTP mid-body",
        ),
        (
            lambda req: [b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n{}"],
            EndpointUnreachable,
            "not valid HTTP/1.1",
        ),
        (lambda req: [b"HTTP/1.1 102 Processing\r\n\r\n" * 3, 30.0], EndpointTimeout, "no response headers"),
    ],
)
def test_broken_http_is_named_for_what_it_is(raw_server, handler, error, needle):
    exc, elapsed = fail(raw_server, handler, error)
    assert needle in str(exc) and elapsed < 2.5


def test_texts_that_are_not_valid_utf8_are_still_sent(raw_server):
    raw_server.handler = lambda req: [ok_json(req, n=2)]
    with client(raw_server.url) as c:
        assert c.embed(["broken \ud800 surrogate", "fine"], sort_by_length=False).shape == (2, DIM)
    assert raw_server.requests[0].json()["input"][0] == "broken \ud800 surrogate"


def test_a_flood_of_compressed_nothing_is_bounded_too(raw_server):
    def empty_blocks(req: Any) -> Iterator[Any]:
        yield (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: deflate\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        block = b"\x00\x00\x00\xff\xff" * 13107  # empty stored deflate blocks: raw bytes that decode to nothing
        yield b"%x\r\n%s\r\n" % (len(block), block)
        while True:
            yield b"%x\r\n%s\r\n" % (len(block), block)

    exc, elapsed = fail(raw_server, empty_blocks, ResponseTooLarge, timeout=10.0)
    assert "sends more than" in str(exc) and elapsed < 8.0


def test_a_model_list_that_echoes_the_key_is_refused(raw_server):
    raw_server.handler = lambda req: [
        http_response(json.dumps({"data": [{"id": req.headers.get("authorization", "")}]}))
    ]
    with client(raw_server.url) as c, pytest.raises(ResponseFormatError, match="echoes credentials") as info:
        c.get_json(c.config.models_url)
    assert "'Bearer ***'" in str(info.value)
    assert_clean(info.value)
