"""Load test servers: a small OpenAI-style embeddings server on loopback (threaded ``http.server``)
that can be slowed down or made to answer 429 / 500, and real infinity-emb servers (one throttled).

The fake server's vectors are a bag of hashed words, L2-normalized: deterministic, so two fake
deployments give identical retrieval, and lexical enough to retrieve the small dataset well.
``vectors="random"`` serves a vector that ignores the words (a broken deployment).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def load_dataset(extended_beir) -> Path:
    return extended_beir(3)


@pytest.fixture(scope="session")
def tiny_prepared(tiny_model_dir, load_dataset):
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    return prepare(RunSpec(model=str(tiny_model_dir), dataset=str(load_dataset), device="cpu", use_cache=False))


def word_vector(text: str, dim: int, *, random_words: bool = False) -> list[float]:
    """Hashed bag of words (or, with ``random_words``, a vector from the whole text's hash), unit length."""
    v = [0.0] * dim
    words = [text] if random_words else [w.strip(".,?!'").lower() for w in text.split()] or [""]
    for w in words:
        h = hashlib.sha256(w.encode()).digest()
        if random_words:
            v = [(b - 127.5) for b in (h * (dim // len(h) + 1))[:dim]]
        else:
            v[h[0] % dim] += 1.0
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


class FakeServer:
    """``/v1/models``, ``/health`` and ``/v1/embeddings`` on 127.0.0.1. ``delay`` seconds per request
    plus ``per_input`` per text; ``statuses`` is a cycle of answers (e.g. [200, 429]); it records the
    peak number of requests in flight and each request's arrival time."""

    def __init__(
        self,
        dim: int = 32,
        *,
        delay: float = 0.0,
        per_input: float = 0.0,
        vectors: str = "words",
        model: str = "fake-model",
    ) -> None:
        self.dim, self.delay, self.per_input, self.vectors, self.model = dim, delay, per_input, vectors, model
        self.statuses: list[int] = [200]
        self.count = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.arrivals: list[float] = []
        self.inputs: list[list[str]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, obj: Any) -> None:
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._send(200 if self.path == "/health" else 404, {"unix": time.time()})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                self._send(*server.answer(body))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        texts = body.get("input") or []
        with self.lock:
            status = self.statuses[self.count % len(self.statuses)]
            self.count += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.arrivals.append(time.perf_counter())
            self.inputs.append(list(texts))
        try:
            time.sleep(self.delay + self.per_input * len(texts))
            if status != 200:
                return status, {"error": {"message": "busy", "code": status}}
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": word_vector(t, self.dim, random_words=self.vectors == "random"),
                }
                for i, t in enumerate(texts)
            ]
            return 200, {"object": "list", "data": data, "model": self.model, "usage": {"prompt_tokens": 0}}
        finally:
            with self.lock:
                self.in_flight -= 1

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_server():
    """A factory of FakeServers, all shut down after the test."""
    made: list[FakeServer] = []

    def make(**kw: Any) -> FakeServer:
        s = FakeServer(**kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


# -- real infinity-emb servers (started by the root conftest's infinity_launcher) ------------------
@pytest.fixture(scope="session")
def infinity_pair(bundled_model_dir, infinity_launcher):
    """Two real infinity-emb servers on the bundled model: "fast" (default batch size) and "throttled"
    (``--batch-size 1``: one text per forward pass)."""
    model = Path(bundled_model_dir)
    return infinity_launcher("load", {"fast": (model, []), "throttled": (model, ["--batch-size", "1"])})
