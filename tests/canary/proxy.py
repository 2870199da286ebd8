"""A load balancer in front of real servers, for the fleet tests: a loopback HTTP proxy that forwards each
request, headers (Authorization included) and body as they are, to one of N upstream URLs, chosen by a
:class:`Router` (round robin, or seeded at random with a given share to one member), and returns the
upstream's status, headers and body as they are. With ``rewrite`` it is a gateway that edits each request body on
its way (:func:`prefix_rewrite`: one that drops a query instruction, or adds it to every input)."""

from __future__ import annotations

import http.client
import random
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# hop-by-hop headers (RFC 9110 7.6.1) and the ones the proxy sets itself; everything else is forwarded
_NOT_FORWARDED = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host"}
)


class Router:
    """Which upstream answers the next request: round robin (``share`` None), or member ``bad`` with
    probability ``share`` (seeded, each request independently) and the others in turn otherwise.
    ``routed`` records the upstream index of every request."""

    def __init__(self, members: int, *, share: float | None = None, bad: int = 0, seed: int = 0) -> None:
        if members < 1 or not 0 <= bad < members:
            raise ValueError(f"bad member {bad} not among {members}")
        self.members = members
        self.share = share
        self.bad = bad
        self.rng = random.Random(seed)
        self.routed: list[int] = []
        self._turn = 0
        self._lock = threading.Lock()

    def pick(self) -> int:
        with self._lock:
            if self.share is not None and self.rng.random() < self.share:
                k = self.bad
            else:
                others = [i for i in range(self.members) if self.share is None or i != self.bad or self.members == 1]
                k = others[self._turn % len(others)]
                self._turn += 1
            self.routed.append(k)
            return k


class Proxy:
    """The proxy on 127.0.0.1 (a free port); ``url`` is its OpenAI base URL (``.../v1``), like its upstreams'."""

    def __init__(
        self,
        upstreams: list[str],
        router: Router,
        timeout: float = 120.0,
        rewrite: Callable[[str, bytes], bytes] | None = None,
    ) -> None:
        if len(upstreams) != router.members:
            raise ValueError(f"{len(upstreams)} upstreams for a router of {router.members}")
        self.upstreams = [urllib.parse.urlsplit(u) for u in upstreams]
        self.router = router
        self.timeout = timeout
        self.rewrite = rewrite  # (path, request body) -> the body forwarded: a gateway that edits requests
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, data = proxy.forward(self.command, self.path, dict(self.headers.items()), body)
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """One request to the upstream the router picks: its status, headers (less hop-by-hop) and body."""
        up = self.upstreams[self.router.pick()]
        if self.rewrite is not None and method == "POST":
            body = self.rewrite(path, body)
        conn = http.client.HTTPConnection(up.hostname or "127.0.0.1", up.port, timeout=self.timeout)
        try:
            sent = {k: v for k, v in headers.items() if k.lower() not in _NOT_FORWARDED | {"content-length"}}
            sent["Host"] = up.netloc
            sent["Content-Length"] = str(len(body))
            conn.request(method, path, body=body, headers=sent)
            resp = conn.getresponse()
            data = resp.read()
            kept = [
                (k, v)
                for k, v in resp.getheaders()
                if k.lower() not in _NOT_FORWARDED | {"content-length", "date", "server"}
            ]
            return resp.status, kept, data
        finally:
            conn.close()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def prefix_rewrite(prefix: str, mode: str) -> Callable[[str, bytes], bytes]:
    """A gateway's edit of the ``input`` of every ``/embeddings`` request: ``strip`` removes ``prefix`` from each
    input that starts with it (the query instruction dropped); ``add`` prepends it to each input that lacks it (the
    instruction applied to documents too). Other routes and bodies pass as they are."""
    import json

    if mode not in ("strip", "add") or not prefix:
        raise ValueError(f"mode {mode!r} with prefix {prefix!r}: choose strip or add, and a non-empty prefix")

    def edit(text: object) -> object:
        if not isinstance(text, str):
            return text  # token ids pass as they are
        if mode == "strip":
            return text[len(prefix) :] if text.startswith(prefix) else text
        return text if text.startswith(prefix) else prefix + text

    def rewrite(path: str, body: bytes) -> bytes:
        if not path.rstrip("/").endswith("/embeddings"):
            return body
        try:
            payload = json.loads(body)
        except ValueError:
            return body
        if not isinstance(payload, dict) or "input" not in payload:
            return body
        given = payload["input"]
        payload["input"] = [edit(t) for t in given] if isinstance(given, list) else edit(given)
        return json.dumps(payload).encode()

    return rewrite
