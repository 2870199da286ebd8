"""Strict checks of one ``/v1/embeddings`` response: the contract's side of the endpoint client.

One vector per input; every ``index`` an int, unique and in range (rows re-ordered by ``index``,
never by position); the expected dimension; finite numbers only; no zero vector; unit norm when
normalized; ``model`` naming the served model. The first violation raises a typed
:class:`ResponseError` naming the item and what was wrong. Pure functions, no I/O.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import EndpointError

NORM_TOL = 1e-3
_SNIPPET = 40


# -- errors ---------------------------------------------------------------------------------------
class ResponseError(EndpointError):
    """The response breaks the embedding contract; ``item`` names the input concerned, if any."""

    def __init__(self, message: str, item: str | None = None) -> None:
        super().__init__(f"{item}: {message}" if item else message)
        self.item = item


class ResponseFormatError(ResponseError):
    """Not JSON, no ``data`` list, an entry that is not an object, an embedding of the wrong type."""


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


# -- response checks (pure) -----------------------------------------------------------------------
def parse_embeddings(payload: Any, labels: Sequence[str], expect: Expectation, *, dimensions: int | None = None,
                     encoding_format: str = "float", check_norm: bool = True) -> np.ndarray:
    """Validate one ``/v1/embeddings`` response for ``len(labels)`` inputs; float32 rows in input order."""
    n = len(labels)
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        raise ResponseFormatError("response is not an object with a 'data' list")
    model = payload.get("model")
    if expect.models:
        if not isinstance(model, str):
            raise ModelMismatch(f"response has no 'model' string (got {model!r}); "
                                f"expected {sorted(expect.models)[0]!r}")
        if not model_matches(model, expect.models):
            raise ModelMismatch(f"response names model {model!r}, but the served model is "
                                f"{' or '.join(repr(m) for m in sorted(expect.models))}; "
                                "the endpoint serves a different model (or alias) than the canary asked for")
    data = payload["data"]
    indexes: list[int] = []
    for pos, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise ResponseFormatError(f"data[{pos}] is {type(entry).__name__}, not an object")
        idx = entry.get("index")
        if type(idx) is not int:
            raise IndexMismatch(f"data[{pos}] has index {idx!r}, not an integer")
        indexes.append(idx)
    if len(data) != n:
        missing = sorted(set(range(n)) - set(indexes))
        hint = f"; missing: {', '.join(labels[i] for i in missing[:5])}" if missing else ""
        raise CountMismatch(f"response has {len(data)} vector(s) for {n} input(s){hint}")
    seen: dict[int, int] = {}
    for pos, idx in enumerate(indexes):
        if not 0 <= idx < n:
            raise IndexMismatch(f"data[{pos}] has index {idx}, out of range 0..{n - 1}")
        if idx in seen:
            raise IndexMismatch(f"index {idx} appears twice (data[{seen[idx]}] and data[{pos}])", labels[idx])
        seen[idx] = pos
    want = dimensions or expect.dim
    out = np.empty((n, want), dtype=np.float32)
    for pos, idx in enumerate(indexes):
        label = labels[idx]
        vec = _vector(data[pos].get("embedding"), label, encoding_format)
        if vec.shape[0] != want:
            hint = (f" (dimensions={dimensions} was requested; the server ignored it)"
                    if dimensions and vec.shape[0] == expect.dim else "")
            raise DimensionMismatch(f"vector has {vec.shape[0]} dimensions, expected {want}{hint}", label)
        bad = np.flatnonzero(~np.isfinite(vec))
        if bad.size:
            raise NonFiniteVector(f"value {vec[bad[0]]} at dimension {int(bad[0])} "
                                  f"({bad.size} non-finite value(s) in the vector)", label)
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            raise ZeroVector("zero vector (all values 0)", label)
        if check_norm and expect.normalized and abs(norm - 1.0) > expect.norm_tol:
            raise NormMismatch(f"norm {norm:.6f}, but the contract says normalized (|norm-1| <= {expect.norm_tol})",
                               label)
        out[idx] = vec
    return out


def _vector(raw: Any, label: str, encoding_format: str) -> np.ndarray:
    if encoding_format == "base64":
        if not isinstance(raw, str):
            raise ResponseFormatError(f"embedding is {type(raw).__name__}, expected a base64 string", label)
        try:
            buf = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise ResponseFormatError("embedding is not valid base64", label) from None
        if len(buf) % 4:
            raise ResponseFormatError(f"base64 embedding has {len(buf)} bytes, not a whole number of float32s",
                                      label)
        return np.frombuffer(buf, dtype="<f4").astype(np.float64)
    if not isinstance(raw, list):
        raise ResponseFormatError(f"embedding is {type(raw).__name__}, expected a list of numbers", label)
    for d, v in enumerate(raw):
        if type(v) is not float and type(v) is not int:
            raise NonFiniteVector(f"value {v!r} at dimension {d} is not a number", label)
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
