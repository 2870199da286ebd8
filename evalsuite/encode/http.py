"""HTTP for the endpoint client: total deadlines, bounded and decoded bodies, typed transport errors.

A request's deadline bounds *every* socket operation it makes (connect, each write, each read,
through headers, ``100 Continue`` lines and the body), not each read on its own: the sockets come
from :class:`_DeadlineBackend`, which clamps each operation to the time left on the calling
thread's deadline. Bodies are streamed raw and decoded here (identity, gzip, deflate) with the
*decoded* size capped while reading, so neither a large body nor a compression bomb is ever held.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .response import check_info, check_models, load_json
from .secret import RedactedError, cut

if TYPE_CHECKING:
    import httpcore
    import httpx

ACCEPT_ENCODING = "gzip, deflate"
ERROR_BODY_CAP = 64 * 1024  # what is kept of a non-2xx body (for the message); the rest is not read


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


class ResponseTooLarge(RedactedError):
    """The (decoded) body is larger than the configured cap."""


class ResponseDecodingError(RedactedError):
    """The body does not decode as its ``Content-Encoding`` says (or uses one the client did not ask for)."""


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

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> httpcore.NetworkStream:
            return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                         _clamp(timeout, httpcore.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class _DeadlineBackend(httpcore.NetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.SyncBackend()

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                        socket_options: Any = None) -> httpcore.NetworkStream:
            return _DeadlineStream(self._inner.connect_tcp(host, port, _clamp(timeout, httpcore.ConnectTimeout),
                                                           local_address, socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None,
                                socket_options: Any = None) -> httpcore.NetworkStream:
            return _DeadlineStream(self._inner.connect_unix_socket(path, _clamp(timeout, httpcore.ConnectTimeout),
                                                                   socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    class _DeadlineTransport(httpx.HTTPTransport):
        # HTTPTransport.__init__ only builds its pool; this one builds the same pool over deadline sockets.
        def __init__(self) -> None:
            self._pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(),
                                                 max_connections=max_connections,
                                                 max_keepalive_connections=max_keepalive,
                                                 network_backend=_DeadlineBackend())

    return _DeadlineTransport()


# -- bodies ---------------------------------------------------------------------------------------
class _Decoder:
    """One content coding, decoded incrementally with each output bounded by ``room``."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self.gzip = coding in ("gzip", "x-gzip")
        self.fed = False
        self.raw = False  # deflate sent without its zlib wrapper (some servers do)
        self.head = b""  # deflate input before any output: fed again if it turns out to be raw
        self.produced = False
        self._obj = self._new()

    def _new(self) -> Any:
        if self.gzip:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return zlib.decompressobj(-zlib.MAX_WBITS if self.raw else zlib.MAX_WBITS)

    def feed(self, data: bytes, room: int) -> Iterator[bytes]:
        self.fed = self.fed or bool(data)
        if not self.gzip and not self.produced and not self.raw:
            self.head += data
        while data:
            try:
                out = self._obj.decompress(data, room + 1)
            except zlib.error:
                if not self.gzip and not self.produced and not self.raw:
                    self.raw = True
                    self._obj, data = self._new(), self.head
                    continue
                raise
            if out:
                self.produced, self.head = True, b""
                yield out
            data = self._obj.unconsumed_tail
            if self._obj.eof and self._obj.unused_data:
                if not self.gzip or not self._obj.unused_data.strip(b"\0"):
                    raise zlib.error("data after the end of the compressed stream")
                data, self._obj = self._obj.unused_data, self._new()  # another gzip member follows

    def finish(self) -> bytes:
        out: bytes = self._obj.flush()  # bounded: inflate holds at most its window back
        if self.fed and not self._obj.eof:
            raise zlib.error("the compressed stream ends early")
        return out


def _decoders(header: str) -> list[_Decoder]:
    codings = [c.strip().lower() for c in header.split(",") if c.strip()]
    out = []
    for coding in reversed(codings):  # the last coding applied is the first undone
        if coding == "identity":
            continue
        if coding not in ("gzip", "x-gzip", "deflate"):
            raise ResponseDecodingError(f"Content-Encoding {cut(coding, 40)!r} is not supported (the client asks "
                                        f"for {ACCEPT_ENCODING} only)")
        out.append(_Decoder(coding))
    return out


def _decode_chain(chunks: Iterator[bytes], decoders: list[_Decoder], cap: int) -> Iterator[bytes]:
    """Decoded bytes of ``chunks``, never yielding much more than ``cap`` in all (the caller stops at it)."""
    stream = chunks
    for dec in decoders:
        stream = _through(stream, dec, cap)
    return stream


def _through(chunks: Iterator[bytes], dec: _Decoder, cap: int) -> Iterator[bytes]:
    for chunk in chunks:
        yield from dec.feed(chunk, cap)
    tail = dec.finish()
    if tail:
        yield tail


@dataclass(frozen=True)
class EndpointResponse:
    """A complete, decoded, size-checked answer: what ``EndpointEncoder.request`` returns."""

    method: str
    url: str
    status_code: int
    headers: Any  # httpx.Headers (case-insensitive)
    content: bytes
    what: str
    truncated: bool = False  # a non-2xx body longer than ERROR_BODY_CAP (the rest was not read)

    @property
    def content_type(self) -> str:
        return str(self.headers.get("content-type", ""))

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON; ResponseFormatError (an EndpointError) naming status, type and a snippet if not."""
        return load_json(self.content, self.what, status=self.status_code, content_type=self.content_type)

    def checked_json(self, models_url: str) -> Any:
        """:meth:`json`, with ``/v1/models`` and ``/info`` answers checked for shape."""
        payload = self.json()
        if self.url == models_url:
            check_models(payload, self.what)
        elif self.url.endswith("/info"):
            check_info(payload, self.what)
        return payload


def read_body(resp: httpx.Response, *, cap: int, what: str) -> tuple[bytes, bool]:
    """The decoded body of a streamed response, at most ``cap`` bytes (ResponseTooLarge beyond, for a
    2xx; a longer error body is cut at ERROR_BODY_CAP). Transport errors propagate (httpx's)."""
    ok = resp.status_code < 300
    limit = cap if ok else min(cap, ERROR_BODY_CAP)
    declared = resp.headers.get("content-length", "")
    codings = resp.headers.get("content-encoding", "")
    if ok and declared.isdigit() and not codings.strip() and int(declared) > limit:
        raise ResponseTooLarge(f"{what}: HTTP {resp.status_code} declares a body of {int(declared)} bytes, over the "
                               f"{limit}-byte cap for this request; raise EndpointConfig.max_response_bytes if the "
                               "answer is genuine")
    try:
        decoders = _decoders(codings)
    except ResponseDecodingError as exc:
        raise ResponseDecodingError(f"{what}: HTTP {resp.status_code}: {exc}") from None
    parts: list[bytes] = []
    size = 0
    try:
        for part in _decode_chain(resp.iter_raw(), decoders, limit):
            size += len(part)
            if size > limit:
                if not ok:
                    parts.append(part[: len(part) - (size - limit)])
                    return b"".join(parts), True
                how = "decodes to" if decoders else "is"
                raise ResponseTooLarge(f"{what}: HTTP {resp.status_code} body {how} more than {limit} bytes (the "
                                       "cap for this request); stopped reading. Raise "
                                       "EndpointConfig.max_response_bytes if the answer is genuine")
            parts.append(part)
    except zlib.error as exc:
        raise ResponseDecodingError(f"{what}: HTTP {resp.status_code} says Content-Encoding {cut(codings, 40)!r} "
                                    f"but the body does not decode ({cut(str(exc), 80)})") from None
    return b"".join(parts), False


def body_cap(n_inputs: int, dim: int, encoding_format: str) -> int:
    """The most decoded bytes a sound embeddings answer can need, with ample headroom.

    A float as JSON takes at most ~25 characters plus a separator (32 allowed); base64 float32 takes
    5.34 characters (8 allowed); each item and the envelope get 1 KiB; everything is doubled; 1 MiB floor.
    """
    per_number = 8 if encoding_format == "base64" else 32
    return 2 * (1 << 20) + 2 * max(1, n_inputs) * (max(1, dim) * per_number + 1024)
