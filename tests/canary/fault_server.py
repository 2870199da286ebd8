"""The fault-injecting OpenAI-style embedding server of the canary tests (pytest-httpserver, real HTTP on
loopback, vectors from the real tiny reference model), and its replicas."""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable
from typing import Any

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
        self.empty_list_body: object = {"detail": [{"msg": "empty"}]}  # a str: sent as text/plain, not JSON
        self.refuse_tokens: int | None = None  # a request holding a longer text is refused with 400 (as vLLM's)
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
        # input faults (issue 40), each off by default: every all-uppercase input gets one vector (Ollama#13942);
        # a vector cache keyed by an input's first ``prefix_cache`` characters (a later input sharing them gets the
        # cached vector); each vector moved with probability ``nondeterministic`` (seeded); a NaN vector for every
        # input containing ``nan_for``
        self.case_collapse = False
        self.prefix_cache: int | None = None
        self.nondeterministic = 0.0
        self.nan_for: str | None = None
        self.moved: list[bool] = []  # per vector answered while ``nondeterministic`` is set: was it moved
        self._cached: dict[str, Any] = {}
        self._rng = random.Random(7)
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
            if isinstance(self.empty_list_body, str):
                return Response(self.empty_list_body, status=self.empty_list_status, content_type="text/plain")
            return reply(self.empty_list_body, self.empty_list_status)
        dims = body.get("dimensions") or self.hidden
        if dims > self.hidden or dims < 1:
            return reply({"error": {"message": f"dimensions {dims} not in 1..{self.hidden}", "code": 400}}, 400)
        texts = [
            t[len(self.strip_prefix) :] if self.strip_prefix and t.startswith(self.strip_prefix) else t for t in texts
        ]
        if self.refuse_tokens is not None:
            tokenizer = self.encoders(self.max_length).tokenizer
            longest = max(len(tokenizer(t)["input_ids"]) for t in texts)
            if longest > self.refuse_tokens:
                said = f"maximum context length is {self.refuse_tokens} tokens; an input has {longest}"
                return reply({"error": {"message": said, "code": 400}}, 400)
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
            if faulty and (self.case_collapse, self.prefix_cache, self.nondeterministic, self.nan_for) != (
                False,
                None,
                0.0,
                None,
            ):
                full = self._input_faults(texts, full)
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

    def _input_faults(self, texts: list[str], full: Any) -> Any:
        """``full`` with the input faults that are set applied to the rows they hit (see ``__init__``)."""
        import numpy as np

        full = np.array(full, dtype=np.float64)
        for i, text in enumerate(texts):
            norm = np.linalg.norm(full[i])
            if self.case_collapse and text.isupper():
                one = np.cos(np.arange(full.shape[1]))  # the one vector every all-uppercase input gets
                full[i] = one * norm / np.linalg.norm(one)
            if self.prefix_cache is not None:
                full[i] = self._cached.setdefault(text[: self.prefix_cache], full[i].copy())
            if self.nondeterministic:
                moved = self._rng.random() < self.nondeterministic
                self.moved.append(moved)
                if moved:
                    full[i, 1] += 0.5 * norm
                    full[i] *= norm / np.linalg.norm(full[i])
            if self.nan_for is not None and self.nan_for in text:
                full[i] = np.nan
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


@contextlib.contextmanager
def serving(encoders: Callable[[int], Any], hidden: int, max_length: int) -> Any:
    """A FaultServer on its own loopback port, vectors from ``encoders(max_length)``; stopped on exit."""
    from pytest_httpserver import HTTPServer

    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    fs = FaultServer(server, encoders, hidden=hidden, max_length=max_length)
    try:
        yield fs
    finally:
        fs.release.set()
        server.clear()
        server.stop()
