"""Strict checks of one ``/v1/embeddings`` response: the contract's side of the endpoint client.

One vector per input; every ``index`` an int, unique and in range (rows re-ordered by ``index``,
never by position); the expected dimension; finite numbers only; no zero vector; unit norm when
normalized; ``model`` naming the served model. The first violation raises a typed
:class:`ResponseError` naming the item and what was wrong. Pure functions, no I/O.

Every byte came from the server: JSON is parsed here (:func:`load_json`, never a RecursionError
or a bare ValueError), ``/v1/models`` and ``/info`` are checked too, and any server text quoted in
a message is cut (:func:`evalsuite.encode.secret.cut`) and redacted of every API key.

One module, just over 300 lines: every check of a server's bytes in one place, sharing ``describe`` and the
snippet limits, so no answer reaches the client unchecked.
"""

from __future__ import annotations

import base64
import binascii
import json
import reprlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .secret import RedactedError, cut, redact

NORM_TOL = 1e-3
_SNIPPET = 40
MAX_MODEL_NAME = 1024  # longer "model ids" are not names
ENCODING_FORMATS = ("float", "base64")


# -- errors ---------------------------------------------------------------------------------------
class ResponseError(RedactedError):
    """The response breaks the embedding contract; ``item`` names the input concerned, if any."""

    def __init__(self, message: str, item: str | None = None) -> None:
        super().__init__(f"{item}: {message}" if item else message)
        self.item = item


class ResponseFormatError(ResponseError):
    """Not JSON, no ``data`` list, an entry that is not an object, an embedding of the wrong type."""


class ServerReportedError(ResponseFormatError):
    """A 200 whose body is ``{"error": ...}``: the server's own failure message, shown as given."""


class ModelMismatch(ResponseError):
    """``model`` in the response is not the served model."""


class CountMismatch(ResponseError):
    """The number of vectors differs from the number of inputs."""


class IndexMismatch(ResponseError):
    """An ``index`` that is not an int, is repeated, or is out of range."""


class DimensionMismatch(ResponseError):
    """A vector of the wrong length."""


class NonFiniteVector(ResponseError):
    """A NaN, an infinity or a non-number in a vector."""


class ZeroVector(ResponseError):
    """An all-zero vector (no direction, so no similarity)."""


class NormMismatch(ResponseError):
    """A vector whose norm is not 1 although the contract says normalized."""


@dataclass(frozen=True)
class Expectation:
    """What every vector must look like: the contract's side of the response checks."""

    dim: int
    normalized: bool
    models: frozenset[str] = field(default_factory=frozenset)
    norm_tol: float = NORM_TOL
    encoding_format: str = "float"  # how vectors travel: a JSON list of numbers, or base64 float32


def model_matches(got: str, accepted: frozenset[str]) -> bool:
    """``got`` names the served model: equal to an accepted name, or the same path tail.

    SGLang answers with the model path and Infinity with the last path parts, so
    ``/models/org/name`` matches ``org/name`` and ``name`` (and the reverse).
    """
    if not accepted or got in accepted:
        return True
    g = got.rstrip("/")
    for name in accepted:
        n = name.rstrip("/")
        if g.endswith("/" + n) or n.endswith("/" + g):
            return True
    return False


# -- server text ----------------------------------------------------------------------------------
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 2, 4, 4, 60, 60


def describe(value: object) -> str:
    """A short, safe rendering of any JSON value from the server (any depth, any size, redacted)."""
    if isinstance(value, str):
        return repr(cut(value))
    if isinstance(value, int) and not isinstance(value, bool):
        digits = str(abs(value)) if abs(value) < 10**4000 else None
        if digits is None or len(digits) > 40:
            return f"an integer of {len(digits) if digits else 'over 4000'} digits"
        return str(value)
    return cut(_REPR.repr(value))


def load_json(content: bytes, where: str, *, status: int = 200, content_type: str = "") -> object:
    """Parse a body as JSON; ResponseFormatError naming status, content type and a snippet if it is not."""
    try:
        return json.loads(content)
    except RecursionError:
        raise ResponseFormatError(
            f"{where}: HTTP {status} with a JSON body nested too deeply to parse ({len(content)} bytes)"
        ) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, integer digit limit
        ctype = content_type or "no content type"
        snippet = content[:1000].decode("utf-8", "replace")
        body = f"body {cut(snippet)!r}" if content.strip() else "an empty body"
        raise ResponseFormatError(
            f"{where}: HTTP {status} ({ctype}) is not JSON ({cut(str(exc), 80)}): {body}"
        ) from None


def server_error_message(payload: object) -> str | None:
    """The server's own message when a body is ``{"error": ...}`` (OpenAI style) or a bare ``{"detail": ...}``."""
    if not isinstance(payload, dict) or isinstance(payload.get("data"), list):
        return None
    for key in ("error", "detail"):
        err = payload.get(key)
        if err is None:
            continue
        if isinstance(err, dict):
            msg = err.get("message", err)
            return describe(msg) if not isinstance(msg, str) else cut(msg)
        return cut(err) if isinstance(err, str) else describe(err)
    return None


def check_models(payload: object, where: str) -> list[dict[str, object]]:
    """The entries of a ``/v1/models`` answer: an object whose ``data`` lists objects with a string ``id``."""
    error = server_error_message(payload)
    if error is not None:
        raise ServerReportedError(f"{where}: the server answered with an error instead of the model list: {error}")
    if not isinstance(payload, dict):
        raise ResponseFormatError(
            f"{where}: the answer is a JSON {type(payload).__name__}, expected an object "
            f"with a 'data' list (OpenAI /v1/models): {describe(payload)}"
        )
    data = payload.get("data")
    if not isinstance(data, list):
        raise ResponseFormatError(f"{where}: 'data' is {describe(data)}, expected a list of models")
    for pos, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise ResponseFormatError(f"{where}: data[{pos}] is {describe(entry)}, expected an object with an 'id'")
        _check_name(entry.get("id"), f"{where}: data[{pos}].id")
    return data


def check_info(payload: object, where: str) -> dict[str, object]:
    """A TEI-style ``/info`` answer: an object whose ``model_id``, if any, is a model name."""
    if not isinstance(payload, dict):
        raise ResponseFormatError(
            f"{where}: the answer is a JSON {type(payload).__name__}, expected an object: {describe(payload)}"
        )
    if "model_id" in payload:
        _check_name(payload["model_id"], f"{where}: model_id")
    return payload


def _check_name(name: object, where: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise ResponseFormatError(f"{where} is {describe(name)}, expected a model name")
    if len(name) > MAX_MODEL_NAME:
        raise ResponseFormatError(f"{where} is {len(name)} characters long ({describe(name)}), not a model name")
    if redact(name) != name:  # kept out of every later message, report and request
        raise ResponseFormatError(f"{where} holds the API key ({describe(name)}): the server echoes credentials")


# -- response checks (pure) -----------------------------------------------------------------------
def parse_embeddings(
    payload: object,
    labels: Sequence[str],
    expect: Expectation,
    *,
    dimensions: int | None = None,
    encoding_format: str | None = None,
    check_norm: bool = True,
) -> np.ndarray:
    """Validate one ``/v1/embeddings`` response for ``len(labels)`` inputs; float32 rows in input order.

    ``encoding_format`` defaults to the expectation's (the client's configured format)."""
    n = len(labels)
    fmt = encoding_format or expect.encoding_format
    error = server_error_message(payload)
    if error is not None:
        raise ServerReportedError(f"the server answered with an error instead of vectors: {error}")
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        got = (
            f"'data' is {describe(payload.get('data'))}"
            if isinstance(payload, dict)
            else f"a JSON {type(payload).__name__}"
        )
        raise ResponseFormatError(f"response is not an object with a 'data' list ({got})")
    model = payload.get("model")
    if expect.models:
        if not isinstance(model, str):
            raise ModelMismatch(
                f"response has no 'model' string (got {describe(model)}); expected {min(expect.models)!r}"
            )
        if not model_matches(model, expect.models):
            raise ModelMismatch(
                f"response names model {describe(model)}, but the served model is "
                f"{' or '.join(repr(m) for m in sorted(expect.models))}; "
                "the endpoint serves a different model (or alias) than the canary asked for"
            )
    data = payload["data"]
    indexes: list[int] = []
    for pos, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise ResponseFormatError(f"data[{pos}] is {type(entry).__name__}, not an object")
        idx = entry.get("index")
        if type(idx) is not int:
            raise IndexMismatch(f"data[{pos}] has index {describe(idx)}, not an integer")
        indexes.append(idx)
    if len(data) != n:
        missing = sorted(set(range(n)) - set(indexes))
        hint = f"; missing: {', '.join(labels[i] for i in missing[:5])}" if missing else ""
        raise CountMismatch(f"response has {len(data)} vector(s) for {n} input(s){hint}")
    seen: dict[int, int] = {}
    for pos, idx in enumerate(indexes):
        if not 0 <= idx < n:
            raise IndexMismatch(f"data[{pos}] has index {describe(idx)}, out of range 0..{n - 1}")
        if idx in seen:
            raise IndexMismatch(f"index {idx} appears twice (data[{seen[idx]}] and data[{pos}])", labels[idx])
        seen[idx] = pos
    want = dimensions or expect.dim
    out = np.empty((n, want), dtype=np.float32)
    for pos, idx in enumerate(indexes):
        label = labels[idx]
        vec = _vector(data[pos].get("embedding"), label, fmt)
        if vec.shape[0] != want:
            hint = (
                f" (dimensions={dimensions} was requested; the server ignored it)"
                if dimensions and vec.shape[0] == expect.dim
                else ""
            )
            raise DimensionMismatch(f"vector has {vec.shape[0]} dimensions, expected {want}{hint}", label)
        bad = np.flatnonzero(~np.isfinite(vec))
        if bad.size:
            raise NonFiniteVector(
                f"value {vec[bad[0]]} at dimension {int(bad[0])} ({bad.size} non-finite value(s) in the vector)", label
            )
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            raise ZeroVector("zero vector (all values 0)", label)
        if check_norm and expect.normalized and abs(norm - 1.0) > expect.norm_tol:
            raise NormMismatch(
                f"norm {norm:.6f}, but the contract says normalized (|norm-1| <= {expect.norm_tol})", label
            )
        out[idx] = vec
    return out


def _vector(raw: object, label: str, encoding_format: str) -> np.ndarray:
    if encoding_format == "base64":
        if not isinstance(raw, str):
            hint = " (the server ignored encoding_format=base64)" if isinstance(raw, list) else ""
            raise ResponseFormatError(f"embedding is {type(raw).__name__}, expected a base64 string{hint}", label)
        try:
            buf = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise ResponseFormatError("embedding is not valid base64", label) from None
        if len(buf) % 4:
            raise ResponseFormatError(f"base64 embedding has {len(buf)} bytes, not a whole number of float32s", label)
        return np.frombuffer(buf, dtype="<f4").astype(np.float64)
    if not isinstance(raw, list):
        hint = " (encoding_format=float was asked)" if isinstance(raw, str) else ""
        raise ResponseFormatError(f"embedding is {type(raw).__name__}, expected a list of numbers{hint}", label)
    for d, v in enumerate(raw):
        if type(v) is int:
            try:
                float(v)
            except OverflowError:
                raise NonFiniteVector(f"value {describe(v)} at dimension {d} is too large for a float", label) from None
        elif type(v) is not float:
            raise NonFiniteVector(f"value {describe(v)} at dimension {d} is not a number", label)
    return np.asarray(raw, dtype=np.float64)


def label_items(texts: Sequence[str], ids: Sequence[str] | None) -> list[str]:
    """How errors name an input: its id (or position) and the start of its text."""
    out = []
    for i, t in enumerate(texts):
        name = ids[i] if ids is not None else f"#{i}"
        snippet = " ".join(t.split())
        snippet = snippet if len(snippet) <= _SNIPPET else snippet[: _SNIPPET - 1] + "…"
        out.append(f'item {name} "{snippet}"')
    return out
