"""A served endpoint's learned sparse vectors, in the two shapes engines serve them (docs/engines.md):

* ``vllm``: ``POST /pooling`` ``{"input": [...], "task": "token_classify"}`` (a BGE-M3 served as
  ``BgeM3EmbeddingModel`` with ``--pooler-config '{"task":"token_classify"}'``) answers, per text, one weight per
  input token with BOS and EOS cut, in input order: no token ids. The client puts them on the token ids of the
  pinned tokenizer, keeps the largest weight per id and leaves the special tokens out, as FlagEmbedding's
  ``lexical_weights`` are made.
* ``tei``: ``POST /embed_sparse`` ``{"inputs": [...]}`` answers, per text, a list of ``{"index": token id,
  "value": weight}``.

Every violation is a typed error naming the text and the field: a dense vector where sparse weights were expected
(the class of mteb#4761, where sparse models were scored as dense), another number of weights than the text has
tokens, a token id outside the vocabulary, a repeated id, a negative or non-finite weight. A text's vector is
``(token ids ascending, weights)`` with every weight > 0, as the local reference's
(:mod:`evalsuite.encode.sparse`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .response import CountMismatch, DimensionMismatch, IndexMismatch, NonFiniteVector, ResponseFormatError, describe
from .sparse import SparseVector

if TYPE_CHECKING:
    from .endpoint import EndpointEncoder, EndpointResponse

SPARSE_SHAPES: tuple[str, ...] = ("vllm", "tei")


class DenseServed(ResponseFormatError):
    """A dense vector served where sparse weights were expected (mteb#4761's class)."""


class NegativeWeight(ResponseFormatError):
    """A served sparse weight below zero (no ReLU on the server's side)."""


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _finite_weights(values: Sequence[object], at: str, field: str) -> np.ndarray:
    if not all(_number(x) for x in values):
        raise ResponseFormatError(f"'{field}' holds a value that is not a number", at)
    out = np.array(values, dtype=np.float64)
    if not np.isfinite(out).all():
        raise NonFiniteVector(f"'{field}' holds a NaN or an infinity: a weight must be a finite number", at)
    return out


def _non_negative(weights: np.ndarray, at: str, field: str) -> np.ndarray:
    if (weights < 0).any():
        raise NegativeWeight(
            f"'{field}' holds a negative weight ({float(weights.min()):g}): sparse weights are >= 0 (the server "
            "applies no ReLU)",
            at,
        )
    return weights


def parse_tei_sparse(
    payload: object, n: int, vocab_size: int, where: str = "embed_sparse answer"
) -> list[SparseVector]:
    """TEI's ``/embed_sparse`` answer: one list of ``{"index", "value"}`` per input, in input order."""
    if not isinstance(payload, list):
        raise ResponseFormatError(f"{where}: expected a list with one entry per input, got {describe(payload)}")
    if len(payload) != n:
        raise CountMismatch(f"{where}: {len(payload)} item(s) for {n} input(s)")
    out: list[SparseVector] = []
    for pos, item in enumerate(payload):
        at = f"{where} [{pos}]"
        if isinstance(item, list) and item and all(_number(x) for x in item):
            raise DenseServed(
                f"a dense vector of {len(item)} numbers was served where sparse weights ({{index, value}} "
                "pairs) were expected: the server embeds with a dense pooling (mteb#4761's class); serve the "
                "model's sparse head",
                at,
            )
        if not isinstance(item, list) or not all(isinstance(e, dict) for e in item):
            raise ResponseFormatError(f"expected a list of {{index, value}} objects, got {describe(item)}", at)
        ids = [e.get("index") for e in item]
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise IndexMismatch("an 'index' (token id) is missing or not an integer", at)
        bad = [i for i in ids if not 0 <= int(i) < vocab_size]
        if bad:
            raise IndexMismatch(
                f"token id {bad[0]} is outside the vocabulary (0..{vocab_size - 1}): the server runs another "
                "tokenizer or model",
                at,
            )
        if len(set(ids)) != len(ids):
            raise IndexMismatch("a token id is listed twice: one weight per token id", at)
        weights = _non_negative(_finite_weights([e.get("value") for e in item], at, "value"), at, "value")
        order = np.argsort(np.array(ids, dtype=np.int64), kind="stable")
        keep = weights[order] > 0
        out.append((np.array(ids, dtype=np.int64)[order][keep], weights[order][keep].astype(np.float32)))
    return out


def parse_vllm_token_weights(payload: object, n: int, where: str = "token_classify answer") -> list[np.ndarray]:
    """vLLM's ``/pooling`` ``token_classify`` answer: one flat list of per-token weights per input."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise ResponseFormatError(f"{where}: expected an object with a 'data' list, got {describe(payload)}")
    if len(data) != n:
        raise CountMismatch(f"{where}: {len(data)} item(s) for {n} input(s)")
    out: list[np.ndarray | None] = [None] * n
    for pos, item in enumerate(data):
        at = f"{where} data[{pos}]"
        index = item.get("index") if isinstance(item, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n or out[index] is not None:
            raise IndexMismatch(f"index {describe(index)} is missing, out of range or repeated", at)
        rows = item.get("data")
        if isinstance(rows, list) and rows and all(isinstance(r, list) and len(r) == 1 for r in rows):
            rows = [r[0] for r in rows]  # one class per token, as a column
        if not isinstance(rows, list) or any(isinstance(r, list) for r in rows):
            raise ResponseFormatError(
                f"'data' must be one weight per token, got {describe(rows)} (token vectors: a token_embed "
                "server, not token_classify)",
                at,
            )
        out[index] = _finite_weights(rows, at, "data")
    return [w for w in out if w is not None]


def pool_token_weights(ids: Sequence[int], weights: np.ndarray, specials: set[int], at: str) -> SparseVector:
    """The weights of one text's tokens (``ids``: its token ids without BOS and EOS, in order) as a sparse vector:
    the largest weight per token id, the special tokens left out, weights > 0 kept."""
    if len(weights) != len(ids):
        raise DimensionMismatch(
            f"{len(weights)} weights served for a text of {len(ids)} tokens (BOS and EOS cut): "
            + (
                "a dense vector served where one weight per token was expected (mteb#4761's class)"
                if len(weights) > len(ids)
                else "the server truncates, or tokenizes with another tokenizer"
            ),
            at,
        )
    _non_negative(weights, at, "data")
    best: dict[int, float] = {}
    for token, w in zip(ids, weights.tolist(), strict=True):
        if token not in specials and w > 0:
            best[token] = max(best.get(token, 0.0), w)
    keys = sorted(best)
    return np.array(keys, dtype=np.int64), np.array([best[k] for k in keys], dtype=np.float32)


def request_sparse(http: EndpointEncoder, batch: Sequence[str], shape: str, *, what: str) -> EndpointResponse:
    """One request for ``batch``'s sparse vectors in ``shape``; the answer whatever its status (the caller decides)."""
    if shape not in SPARSE_SHAPES:
        raise ValueError(f"sparse shape {shape!r}: one of {', '.join(SPARSE_SHAPES)}")
    if shape == "tei":
        return http.request("POST", http.config.root_url("/embed_sparse"), json={"inputs": list(batch)}, what=what)
    body: dict[str, object] = {"input": list(batch), "task": "token_classify"}
    if http.config.model:
        body["model"] = http.config.model
    return http.request("POST", http.config.root_url("/pooling"), json=body, what=what)


def parse_sparse(
    payload: object,
    batch: Sequence[str],
    shape: str,
    *,
    vocab_size: int,
    token_ids: Callable[[Sequence[str]], list[list[int]]],
    specials: set[int],
    where: str,
) -> list[SparseVector]:
    """A 200 answer's sparse vectors, one per text of ``batch`` (typed errors for a broken answer)."""
    if shape == "tei":
        return parse_tei_sparse(payload, len(batch), vocab_size, where)
    weights = parse_vllm_token_weights(payload, len(batch), where)
    ids = token_ids(batch) if batch else []
    return [
        pool_token_weights(i, w, specials, f"{where} data[{pos}]")
        for pos, (i, w) in enumerate(zip(ids, weights, strict=True))
    ]


def fetch_sparse(
    http: EndpointEncoder,
    texts: Sequence[str],
    shape: str,
    *,
    vocab_size: int,
    token_ids: Callable[[Sequence[str]], list[list[int]]],
    specials: set[int],
    batch_size: int = 32,
) -> list[SparseVector]:
    """The served sparse vector of every text, ``batch_size`` texts a request. ``token_ids``: the pinned
    tokenizer's ids of each text with BOS and EOS cut (read for the ``vllm`` shape only)."""
    if shape not in SPARSE_SHAPES:
        raise ValueError(f"sparse shape {shape!r}: one of {', '.join(SPARSE_SHAPES)}")
    out: list[SparseVector] = []
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start : start + batch_size])
        resp = request_sparse(http, batch, shape, what=f"sparse vectors of texts {start}..{start + len(batch) - 1}")
        if resp.status_code != 200:
            raise http.error_for(resp)
        out += parse_sparse(
            resp.json(), batch, shape, vocab_size=vocab_size, token_ids=token_ids, specials=specials, where=resp.what
        )
    return out


def raw_sparse_answers(
    http: EndpointEncoder, texts: Sequence[str], shape: str, *, batch_size: int = 32
) -> list[object]:
    """Each text's served answer as it came, checked for nothing but its place (for the diagnosis of a departure:
    negative weights, a dense vector, BOS and EOS weighed): for ``vllm`` the list of per-token numbers, for ``tei``
    the list of ``{index, value}`` objects (or of numbers, when a dense vector was served). HTTP errors and answers
    without one entry per text are typed errors."""
    out: list[object] = []
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start : start + batch_size])
        resp = request_sparse(http, batch, shape, what=f"sparse answers of texts {start}..{start + len(batch) - 1}")
        if resp.status_code != 200:
            raise http.error_for(resp)
        payload = resp.json()
        if shape == "tei":
            if not isinstance(payload, list) or len(payload) != len(batch):
                raise CountMismatch(f"{resp.what}: expected one entry per input, got {describe(payload)}")
            out += payload
            continue
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != len(batch):
            raise CountMismatch(
                f"{resp.what}: expected a 'data' list with one entry per input, got {describe(payload)}"
            )
        by_index = {item.get("index"): item.get("data") for item in data if isinstance(item, dict)}
        out += [by_index.get(i) for i in range(len(batch))]
    return out
