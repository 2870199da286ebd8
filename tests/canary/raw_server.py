"""A raw HTTP server on loopback for the faults no well-behaved HTTP library sends (hangs, torn bodies, lying
headers), and the bodies it answers with."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any


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


# -- stalling handlers: a server that never finishes an answer (the deadlines' faults) ---------------------------
def trickle_body(req: RawRequest) -> Iterator[Any]:
    """HTTP 200 headers, then a body of 100,000 bytes announced and a byte every 0.2 s."""
    yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    while True:
        yield b" "
        yield 0.2


def endless_continue(req: RawRequest) -> Iterator[Any]:
    """``100 Continue`` every 0.05 s, never a final status."""
    while True:
        yield b"HTTP/1.1 100 Continue\r\n\r\n"
        yield 0.05
