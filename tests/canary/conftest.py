"""Canary test servers: a fault-injecting OpenAI-style server (pytest-httpserver, real HTTP on
loopback, vectors from the real tiny reference model) and real infinity-emb servers.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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


MODEL_LOCK = threading.Lock()  # one request at a time through the shared tiny model and its tokenizer


class FaultServer:
    """An OpenAI-compatible embeddings server on loopback that serves the tiny model, with faults.

    ``fault`` breaks every successful embeddings answer in one way (``batch_dependent``: vectors shift with
    the request's size); ``max_length`` is the token limit it encodes at; ``fail_first`` is a list of
    statuses returned before answering properly; ``hang`` makes the embeddings route wait.

    Partial faults, each hitting some answers only: ``replica`` (a :class:`Replica`) routes each request,
    seeded and at random, to a misconfigured replica with its share; ``long_from``: texts of more tokens come
    out wrong; ``batch_from``: every vector of a request of more texts comes out wrong; ``one_wrong``: the
    longest text of every request of several texts comes out wrong, and with ``one_norm`` gets that norm; ``fault_after``: every fault (``fault``
    too) starts with the answer after that many. ``normalize=False`` serves the pooled vectors as they are.
    """

    def __init__(
        self,
        httpserver: Any,
        encoders: Callable[[int], Any],
        *,
        model: str = "tiny-model",
        hidden: int = 32,
        max_length: int = 64,
    ) -> None:
        self.httpserver = httpserver
        self.encoders = encoders
        self.model = model
        self.listed = [model]
        self.response_model: str | None = None
        self.hidden = hidden
        self.max_length = max_length
        self.pooling = "mean"
        self.fault: str | None = None
        self.fail_first: list[int] = []
        self.retry_after: str | None = None
        self.api_key: str | None = None
        self.enforce_key = True
        self.renormalize_dims = True
        self.honour_dimensions = True
        self.strip_prefix = ""
        self.normalize = True  # False: the vectors as pooled (a server that does not normalize)
        self.rounding: str | None = None  # "float16": every value rounded to float16
        self.model_extra: dict[str, Any] = {}  # more fields of the /v1/models entry (e.g. max_model_len)
        self.empty_list_status = 422
        self.hang = False
        # partial faults (each off by default): see the class docstring
        self.latency = 0.01
        self.replica: Replica | None = None
        self.long_from: int | None = None
        self.batch_from: int | None = None
        self.one_norm: float | None = None
        self.one_wrong = False
        self.fault_after = 0
        self.answered = 0
        self.echo_auth = False  # answer with the Authorization header as the "model" name
        self.echo_auth_status: int | None = None  # answer embeddings with this status, the header echoed in the body
        self.release = threading.Event()
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        httpserver.expect_request("/health", method="GET").respond_with_json({"unix": time.time()})
        httpserver.expect_request("/v1/models", method="GET").respond_with_handler(self._models)
        httpserver.expect_request("/v1/embeddings", method="POST").respond_with_handler(self._embeddings)

    @property
    def url(self) -> str:
        return self.httpserver.url_for("/v1")

    def _denied(self, request: Any) -> Any:
        from werkzeug import Response

        if self.api_key and self.enforce_key and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return Response(json.dumps({"detail": "Unauthorized"}), status=401, content_type="application/json")
        return None

    def _models(self, request: Any) -> Any:
        from werkzeug import Response

        denied = self._denied(request)
        if denied is not None:
            return denied
        data = [{"id": m, "object": "model", "root": f"/models/{m}", **self.model_extra} for m in self.listed]
        return Response(json.dumps({"object": "list", "data": data}), content_type="application/json")

    def _embeddings(self, request: Any) -> Any:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.latency)  # let concurrent requests overlap
            return self._answer(request)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, request: Any) -> Any:
        import numpy as np
        from werkzeug import Response

        from evalsuite.retrieval.vectors import finalize

        def reply(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Any:
            return Response(json.dumps(obj), status=status, content_type="application/json", headers=headers)

        body = request.get_json(force=True)
        with self._lock:
            self.bodies.append(body)
            self.headers.append(dict(request.headers))
            fail = self.fail_first.pop(0) if self.fail_first else None
        if self.hang:
            self.release.wait(30)
        denied = self._denied(request)
        if denied is not None:
            return denied
        if self.echo_auth_status is not None:
            return Response(
                echo_error_body(request.headers.get("Authorization", "")),
                status=self.echo_auth_status,
                content_type="application/json",
            )
        if fail is not None:
            extra = {"Retry-After": self.retry_after} if self.retry_after else None
            return reply({"error": {"message": "try again", "code": fail}}, fail, extra)
        texts = body["input"]
        if isinstance(texts, str):
            texts = [texts]
        if not texts:
            return reply({"detail": [{"msg": "empty"}]}, self.empty_list_status)
        dims = body.get("dimensions") or self.hidden
        if dims > self.hidden or dims < 1:
            return reply({"error": {"message": f"dimensions {dims} not in 1..{self.hidden}", "code": 400}}, 400)
        texts = [
            t[len(self.strip_prefix) :] if self.strip_prefix and t.startswith(self.strip_prefix) else t for t in texts
        ]
        with self._lock:
            faulty = self.answered >= self.fault_after
            self.answered += 1
            replica = self.replica.route() if self.replica is not None and faulty else None
        pooling = "cls" if replica == "cls" else self.pooling
        encoder = self.encoders(self.max_length)
        with MODEL_LOCK:
            pooled = encoder.encode(texts, poolings=[pooling])[pooling]
            full = finalize(pooled, self.hidden, self.normalize)
            if replica == "unnormalized":
                full = full * 1.7
            if faulty and (self.long_from, self.batch_from, self.one_norm, self.one_wrong) != (None, None, None, False):
                full = self._partial(encoder, texts, full)
        if not self.honour_dimensions:
            dims = self.hidden
        if dims == self.hidden:
            vecs = full
        else:
            vecs = finalize(full, dims, self.normalize) if self.renormalize_dims else full[:, :dims]
        if self.rounding:
            vecs = vecs.astype(self.rounding).astype(np.float32)
        rows = [list(map(float, v)) for v in vecs]
        data = [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]
        fault = self.fault if faulty else None
        if fault == "shuffle":
            random.Random(1).shuffle(data)
            data.reverse()
        elif fault == "nan":
            data[-1]["embedding"][5] = float("nan")
        elif fault == "wrong_dim":
            data[0]["embedding"] = data[0]["embedding"][:-1]
        elif fault == "drop":
            del data[len(data) // 2]
        elif fault == "dup_index" and len(data) > 1:
            data[1]["index"] = 0
        elif fault == "str_index":
            data[0]["index"] = "0"
        elif fault == "out_of_range":
            data[-1]["index"] = len(data)
        elif fault == "zero":
            data[0]["embedding"] = [0.0] * len(data[0]["embedding"])
        elif fault == "unnormalized":
            data[0]["embedding"] = [2.0 * x for x in data[0]["embedding"]]
        elif fault == "batch_dependent":  # vectors depend on how many texts share the request
            for d in data:
                e = np.asarray(d["embedding"], dtype=np.float64)
                e[0] += 0.05 * len(texts)
                d["embedding"] = list(map(float, e / np.linalg.norm(e)))
        elif fault == "empty_ok" and texts == [""]:
            data[0]["embedding"] = list(map(float, np.ones(len(rows[0])) / np.sqrt(len(rows[0]))))
        if body.get("encoding_format") == "base64":
            import base64

            for d in data:
                d["embedding"] = base64.b64encode(np.asarray(d["embedding"], dtype="<f4").tobytes()).decode()
        model = request.headers.get("Authorization", "") if self.echo_auth else self.response_model or self.model
        return reply({"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    def _partial(self, encoder: Any, texts: list[str], full: Any) -> Any:
        """``full`` with the partial faults that are set applied to the rows they hit."""
        import numpy as np

        full = np.array(full, dtype=np.float64)
        tokens = [len(encoder.tokenizer(t)["input_ids"]) for t in texts]
        wrong = [False] * len(texts)
        if self.long_from is not None:
            wrong = [w or n > self.long_from for w, n in zip(wrong, tokens, strict=True)]
        if self.batch_from is not None and len(texts) > self.batch_from:
            wrong = [True] * len(texts)
        longest = max(range(len(texts)), key=lambda i: (tokens[i], i))
        if self.one_wrong and len(texts) > 1:
            wrong[longest] = True
        for i, w in enumerate(wrong):
            if w:
                norm = np.linalg.norm(full[i])
                full[i, 0] += 0.5 * norm
                full[i] *= norm / np.linalg.norm(full[i])
        if self.one_norm is not None and len(texts) > 1:
            full[longest] *= self.one_norm / np.linalg.norm(full[longest])
        return full

    def expected(self, texts: list[str]) -> Any:
        from evalsuite.retrieval.vectors import finalize

        return finalize(self.encoders(self.max_length).encode(texts, poolings=["mean"])["mean"], self.hidden, True)


class Replica:
    """A misconfigured replica behind a load balancer: each request reaches it with probability ``share``
    (seeded, independently); ``fault`` is what it does ("cls": CLS pooling, "unnormalized": norm 1.7).
    ``routed`` records, request by request, whether it answered."""

    def __init__(self, share: float, fault: str = "cls", seed: int = 0) -> None:
        self.share = share
        self.fault = fault
        self.rng = random.Random(seed)
        self.routed: list[bool] = []

    def route(self) -> str | None:
        """The fault of the server that answers the next request (None: a faithful one)."""
        bad = self.rng.random() < self.share
        self.routed.append(bad)
        return self.fault if bad else None


def echo_error_body(auth: str) -> str:
    """A JSON error body (no "error" key, so a client quotes it as text) holding an Authorization header
    JSON-escaped (``\\/``), raw, URL-encoded and base64."""
    import base64
    import urllib.parse

    escaped = json.dumps(auth)[1:-1].replace("/", "\\/")
    forms = [auth, urllib.parse.quote(auth, safe=""), base64.b64encode(auth.encode()).decode()]
    return '{"message": "bad request from ' + escaped + '", "forms": ' + json.dumps(forms) + "}"


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
    from pytest_httpserver import HTTPServer

    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    fs = FaultServer(server, server_encoders, hidden=tiny_info.hidden_size, max_length=tiny_info.default_max_length)
    try:
        yield fs
    finally:
        fs.release.set()
        server.clear()
        server.stop()


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
def tiny_prepared(tiny_model_dir, canary_dataset):
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    return prepare(RunSpec(model=str(tiny_model_dir), dataset=str(canary_dataset), device="cpu", use_cache=False))


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
class RawRequest:
    """One request as the raw server read it."""

    def __init__(self, head: bytes, body: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        self.method, self.path, _ = ([*lines[0].split(" "), "", "", ""])[:3]
        self.headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body or b"null")


class RawServer:
    """A threaded HTTP/1.1 server on a raw loopback socket. ``handler(request)`` yields what to do:
    bytes are sent as they are, a float sleeps that long (interrupted when the server stops), and
    the string "reset" closes the connection with a TCP RST. Every request is recorded."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(32)
        self.port = self.sock.getsockname()[1]
        self.requests: list[RawRequest] = []
        self.handler: Callable[[RawRequest], Any] = lambda req: iter(())
        self.stopped = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.origin + "/v1"

    def _accept(self) -> None:
        self.sock.settimeout(0.05)  # so that stop() is noticed
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            self._conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _read_request(self, conn: socket.socket, buf: bytes) -> tuple[RawRequest | None, bytes]:
        while b"\r\n\r\n" not in buf:
            data = conn.recv(65536)
            if not data:
                return None, b""
            buf += data
        head, _, rest = buf.partition(b"\r\n\r\n")
        req = RawRequest(head, b"")
        length = int(req.headers.get("content-length", "0") or 0)
        while len(rest) < length:
            data = conn.recv(65536)
            if not data:
                return None, b""
            rest += data
        req.body = rest[:length]
        return req, rest[length:]

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        try:
            while not self.stopped.is_set():
                req, buf = self._read_request(conn, buf)
                if req is None:
                    return
                self.requests.append(req)
                for step in self.handler(req):
                    if self.stopped.is_set():
                        return
                    if isinstance(step, (int, float)):
                        self.stopped.wait(step)
                    elif step == "reset":
                        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                        return
                    else:
                        conn.sendall(step)
        except OSError:  # the client went away
            return
        finally:
            conn.close()

    def stop(self) -> None:
        self.stopped.set()
        self._threads[0].join(timeout=5)
        self.sock.close()
        for c in self._conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
        for t in self._threads:
            t.join(timeout=5)


def http_response(
    body: bytes | str,
    status: int = 200,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
    reason: str = "X",
) -> bytes:
    """A complete HTTP/1.1 response with Content-Length (``headers`` may override any header)."""
    data = body.encode() if isinstance(body, str) else body
    h = {"Content-Type": content_type, "Content-Length": str(len(data))}
    h.update(headers or {})
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items() if v is not None)
    return head.encode("latin-1") + b"\r\n" + data


def embeddings_json(n: int, dim: int, model: str = "tiny-model", encoding_format: str = "float") -> dict[str, Any]:
    """A sound /v1/embeddings answer: n unit vectors (one-hot) of ``dim`` values."""
    import base64

    import numpy as np

    data = []
    for i in range(n):
        v = np.zeros(dim, dtype="<f4")
        v[i % dim] = 1.0
        emb: Any = base64.b64encode(v.tobytes()).decode() if encoding_format == "base64" else v.tolist()
        data.append({"object": "embedding", "index": i, "embedding": emb})
    return {"object": "list", "data": data, "model": model}


@pytest.fixture
def raw_server():
    """A fresh raw HTTP server on loopback (see RawServer); stopped after the test."""
    server = RawServer()
    try:
        yield server
    finally:
        server.stop()


# -- real infinity-emb servers (started by the root conftest's infinity_launcher) ------------------
def _cls_copy(model_dir: Path, dest: Path) -> Path:
    shutil.copytree(model_dir, dest)
    cfg_path = dest / "1_Pooling" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.update(pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
    cfg_path.write_text(json.dumps(cfg, indent=2))
    return dest


@pytest.fixture(scope="session")
def infinity_servers(bundled_model_dir, tmp_path_factory, infinity_launcher):
    """Two real infinity-emb servers, started together once per session: the bundled model behind
    an API key ("good") and a copy whose pooling config says CLS ("cls", a broken deployment)."""
    import secrets

    key = "sk-infinity-" + secrets.token_hex(12)
    cls_dir = _cls_copy(Path(bundled_model_dir), tmp_path_factory.mktemp("infinity-cls") / "cls-model")
    servers = infinity_launcher("canary", {"good": (Path(bundled_model_dir), ["--api-key", key]), "cls": (cls_dir, [])})
    return {"good": servers["good"], "cls": servers["cls"], "key": key}
