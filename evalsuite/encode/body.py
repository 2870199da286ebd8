"""Response bodies of the endpoint client: streamed raw, decoded here (identity, gzip, deflate) with
the *decoded* size capped while reading, so neither a large body nor a compression bomb is ever
held in memory; then kept as an :class:`EndpointResponse` whose JSON is parsed safely.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .response import check_info, check_models, load_json
from .secret import RedactedError, cut

if TYPE_CHECKING:
    import httpx

ACCEPT_ENCODING = "gzip, deflate"
ERROR_BODY_CAP = 64 * 1024  # what is kept of a non-2xx body (for the message); the rest is not read


class ResponseTooLarge(RedactedError):
    """The (decoded) body is larger than the configured cap."""


class ResponseDecodingError(RedactedError):
    """The body does not decode as its ``Content-Encoding`` says (or uses one the client did not ask for)."""


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
            raise ResponseDecodingError(
                f"Content-Encoding {cut(coding, 40)!r} is not supported (the client asks for {ACCEPT_ENCODING} only)"
            )
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

    def json(self) -> object:
        """The body as JSON; ResponseFormatError (an EndpointError) naming status, type and a snippet if not."""
        return load_json(self.content, self.what, status=self.status_code, content_type=self.content_type)

    def checked_json(self, models_url: str) -> object:
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
        raise ResponseTooLarge(
            f"{what}: HTTP {resp.status_code} declares a body of {int(declared)} bytes, over the "
            f"{limit}-byte cap for this request; raise EndpointConfig.max_response_bytes if the "
            "answer is genuine"
        )
    try:
        decoders = _decoders(codings)
    except ResponseDecodingError as exc:
        raise ResponseDecodingError(f"{what}: HTTP {resp.status_code}: {exc}") from None
    parts: list[bytes] = []
    size = 0
    raw_limit = limit + (1 << 20)  # compressed data that decodes to little is still bounded

    def raw() -> Iterator[bytes]:
        got = 0
        for chunk in resp.iter_raw():
            got += len(chunk)
            if got > raw_limit:
                raise ResponseTooLarge(
                    f"{what}: HTTP {resp.status_code} sends more than {raw_limit} bytes (the cap "
                    "for this request); stopped reading"
                )
            yield chunk

    try:
        for part in _decode_chain(raw(), decoders, limit):
            size += len(part)
            if size > limit:
                if not ok:
                    parts.append(part[: len(part) - (size - limit)])
                    return b"".join(parts), True
                how = "decodes to" if decoders else "is"
                raise ResponseTooLarge(
                    f"{what}: HTTP {resp.status_code} body {how} more than {limit} bytes (the "
                    "cap for this request); stopped reading. Raise "
                    "EndpointConfig.max_response_bytes if the answer is genuine"
                )
            parts.append(part)
    except zlib.error as exc:
        raise ResponseDecodingError(
            f"{what}: HTTP {resp.status_code} says Content-Encoding {cut(codings, 40)!r} "
            f"but the body does not decode ({cut(str(exc), 80)})"
        ) from None
    return b"".join(parts), False


def body_cap(n_inputs: int, dim: int, encoding_format: str) -> int:
    """The most decoded bytes a sound embeddings answer can need, with ample headroom.

    A float as JSON takes at most ~25 characters plus a separator (32 allowed); base64 float32 takes
    5.34 characters (8 allowed); each item and the envelope get 1 KiB; everything is doubled; 1 MiB floor.
    """
    per_number = 8 if encoding_format == "base64" else 32
    return 2 * (1 << 20) + 2 * max(1, n_inputs) * (max(1, dim) * per_number + 1024)
