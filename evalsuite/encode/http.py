"""HTTP for the endpoint client: total deadlines over every socket operation, typed transport errors.

A request's deadline bounds *every* socket operation it makes (connect, each write, each read,
through headers, ``100 Continue`` lines and the body), not each read on its own: the sockets come
from :class:`_DeadlineBackend`, which clamps each operation to the time left on the calling
thread's deadline. Bodies are read by :mod:`evalsuite.encode.body`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .secret import RedactedError, cut

if TYPE_CHECKING:
    import httpcore
    import httpx

NO_HEADERS = "no response headers"  # the phase of a request before its status line and headers


# -- errors ---------------------------------------------------------------------------------------
class EndpointUnreachable(RedactedError):
    """No HTTP answer at all (connection refused or dropped), after the bounded retries."""


class EndpointConnectionDropped(EndpointUnreachable):
    """The server started answering and the connection dropped before the body was complete."""


class EndpointTimeout(RedactedError):
    """The server accepted the connection but did not answer completely within the deadline."""


class EndpointDeadlineExceeded(EndpointTimeout):
    """The overall deadline (e.g. the whole canary's) ran out."""


class EndpointHTTPError(RedactedError):
    """The server answered with an error status (after retries, for retryable ones)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class EndpointAuthError(EndpointHTTPError):
    """401/403: the key is missing, wrong, or not allowed."""


class EndpointRedirect(EndpointHTTPError):
    """A 3xx: redirects are never followed (the key must not travel to another address)."""


# -- deadlines ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Deadline:
    """A point in time (``time.monotonic``) after which no request may run; ``what`` names it in messages."""

    at: float
    seconds: float
    what: str = "the overall deadline"

    @classmethod
    def after(cls, seconds: float, what: str = "the overall deadline") -> Deadline:
        return cls(time.monotonic() + seconds, seconds, what)

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0

    def describe(self) -> str:
        return f"{self.what} ({self.seconds:g}s)"


_active = threading.local()


def _clamp(timeout: float | None, exc: type[Exception]) -> float:
    at: float | None = getattr(_active, "at", None)
    if at is None:
        return 30.0 if timeout is None else timeout
    left = at - time.monotonic()
    if left <= 0:
        raise exc("deadline reached")
    return left if timeout is None else min(timeout, left)


class _Scope:
    """Sets the calling thread's socket deadline for the duration of one request."""

    def __init__(self, at: float) -> None:
        self.at = at

    def __enter__(self) -> None:
        self.prev = getattr(_active, "at", None)
        _active.at = self.at

    def __exit__(self, *exc: object) -> None:
        _active.at = self.prev


def make_transport(max_connections: int, max_keepalive: int) -> httpx.BaseTransport:
    """An httpx transport whose sockets obey the calling thread's request deadline."""
    import httpcore
    import httpx

    class _DeadlineStream(httpcore.NetworkStream):
        def __init__(self, inner: httpcore.NetworkStream) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, _clamp(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _clamp(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(
            self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
        ) -> httpcore.NetworkStream:
            return _DeadlineStream(
                self._inner.start_tls(ssl_context, server_hostname, _clamp(timeout, httpcore.ConnectTimeout))
            )

        def get_extra_info(self, info: str) -> object:
            return self._inner.get_extra_info(info)

    class _DeadlineBackend(httpcore.NetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.SyncBackend()

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> httpcore.NetworkStream:
            return _DeadlineStream(
                self._inner.connect_tcp(
                    host, port, _clamp(timeout, httpcore.ConnectTimeout), local_address, socket_options
                )
            )

        def connect_unix_socket(
            self, path: str, timeout: float | None = None, socket_options: Any = None
        ) -> httpcore.NetworkStream:
            return _DeadlineStream(
                self._inner.connect_unix_socket(path, _clamp(timeout, httpcore.ConnectTimeout), socket_options)
            )

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    class _DeadlineTransport(httpx.HTTPTransport):
        # HTTPTransport.__init__ only builds its pool; this one builds the same pool over deadline sockets.
        def __init__(self) -> None:
            self._pool = httpcore.ConnectionPool(
                ssl_context=httpx.create_ssl_context(),
                max_connections=max_connections,
                max_keepalive_connections=max_keepalive,
                network_backend=_DeadlineBackend(),
            )

    return _DeadlineTransport()


def transport_failure(exc: Exception, phase: str) -> tuple[str, str, bool]:
    """What went wrong on the wire (an httpx TransportError, its text already safe to show), what to
    check, and whether the answer had begun (the connection dropped mid-response)."""
    import httpx

    detail = f"{type(exc).__name__}: {cut(str(exc), 120)}"
    if phase != NO_HEADERS:
        if isinstance(exc, httpx.RemoteProtocolError) and "peer closed" not in str(exc):
            return (
                f"the response broke HTTP mid-body ({phase}; {detail})",
                "the server (or a proxy in front of it) sends malformed answers: check its logs",
                True,
            )
        return (
            f"the connection dropped mid-response ({phase}; {detail})",
            "the server (or a proxy in front of it) closes connections mid-answer: check its logs",
            True,
        )
    if isinstance(exc, httpx.ConnectError):
        return f"could not connect ({detail})", "is the server up and the URL right?", False
    if isinstance(exc, httpx.RemoteProtocolError) and "without sending" not in str(exc):
        return (
            f"the answer is not valid HTTP/1.1 ({detail})",
            "is --endpoint an HTTP server (not HTTPS, gRPC or another protocol)?",
            False,
        )
    return f"the connection closed before any answer ({detail})", "is the server up, and is it an HTTP server?", False
