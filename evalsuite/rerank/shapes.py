"""The reranking APIs that serving engines expose, and a strict parser of their answers.

* ``rerank`` — ``POST {base}/rerank`` with ``{"model", "query", "documents", "top_n"?, "return_documents"}``
  (Infinity, vLLM, SGLang, Cohere/Jina style). The answer lists results sorted by score, best first, each
  with the ``index`` of its document in the request: ``{"results": [{"index", "relevance_score"}]}``
  (Infinity, vLLM) or a bare list of ``{"index", "score"}`` (SGLang).
* ``tei`` — text-embeddings-inference ``POST /rerank`` with ``{"query", "texts", "raw_scores", "return_text"}``;
  a bare list of ``{"index", "score"}``, sorted by score.
* ``score`` — vLLM ``POST /score`` with ``{"model", "text_1": query, "text_2": documents}``; ``{"data":
  [{"index", "score"}]}`` in request order.

:func:`parse_scores` turns an answer into one score per document in request order, and raises a typed
error (one per violation, naming the item) for anything else: a missing, repeated, out-of-range or
non-integer index, a count that is not the documents' (or ``top_n``'s), an order the API does not
promise, a score that is not a finite number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..encode.response import CountMismatch, IndexMismatch, ResponseError, ResponseFormatError, describe


class NonFiniteScore(ResponseError):
    """A score that is NaN, infinite, or not a number."""


class OrderMismatch(ResponseError):
    """Results not in the order the API promises (sorted by score, or request order)."""


@dataclass(frozen=True)
class RerankAPI:
    name: str
    path: str  # appended to the base URL
    sorted_by_score: bool  # results come best first (else in request order)
    engines: str

    def body(
        self, query: str, documents: list[str], *, model: str | None, top_n: int | None, raw_scores: bool
    ) -> dict[str, object]:
        if self.name == "tei":
            return {
                "query": query,
                "texts": documents,
                "raw_scores": raw_scores,
                "return_text": False,
                "truncate": True,
            }
        if self.name == "score":
            body: dict[str, object] = {"text_1": query, "text_2": documents}
        else:
            body = {"query": query, "documents": documents, "return_documents": False}
            if top_n is not None:
                body["top_n"] = top_n
            if raw_scores:  # Infinity's name for "no activation"; other engines may refuse it (a 4xx, reported)
                body["raw_scores"] = True
        if model:
            body["model"] = model
        return body


APIS = {
    "rerank": RerankAPI("rerank", "/rerank", True, "Infinity, vLLM, SGLang"),
    "tei": RerankAPI("tei", "/rerank", True, "text-embeddings-inference"),
    "score": RerankAPI("score", "/score", False, "vLLM"),
}


def _items(payload: object, where: str) -> list[object]:
    if isinstance(payload, list):
        return payload
    if isinstance(payload, dict):
        for key in ("results", "data"):
            if isinstance(payload.get(key), list):
                return list(payload[key])
        raise ResponseFormatError(f"{where}: the answer has no 'results' (or 'data') list; keys: {sorted(payload)[:8]}")
    raise ResponseFormatError(f"{where}: expected a JSON object with 'results' or a list, got {describe(payload)}")


def _score(item: dict[str, object], where: str) -> float:
    for key in ("relevance_score", "score"):
        if key in item:
            value = item[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise NonFiniteScore(f"{where}: {key} is {describe(value)}, not a number", where)
            if not math.isfinite(float(value)):
                raise NonFiniteScore(f"{where}: {key} is {value!r}; a score must be a finite number", where)
            return float(value)
    raise ResponseFormatError(f"{where}: no 'relevance_score' or 'score' (keys: {sorted(item)[:8]})", where)


def parse_scores(
    payload: object, n_documents: int, api: RerankAPI, *, top_n: int | None = None, where: str = "rerank answer"
) -> tuple[np.ndarray, list[int]]:
    """Scores in request order (NaN for documents left out by ``top_n``) and the indices as returned."""
    items = _items(payload, where)
    expected = n_documents if top_n is None else min(top_n, n_documents)
    if len(items) != expected:
        why = f"top_n={top_n}" if top_n is not None else "no top_n was sent, so every document must come back"
        raise CountMismatch(
            f"{where}: {len(items)} result(s) for {n_documents} document(s) ({why}); expected {expected}"
        )
    scores = np.full(n_documents, np.nan)
    order: list[int] = []
    for pos, item in enumerate(items):
        at = f"{where} results[{pos}]"
        if not isinstance(item, dict):
            raise ResponseFormatError(f"{at}: expected an object, got {describe(item)}", at)
        index = item.get("index")
        if isinstance(index, bool) or not isinstance(index, int):
            raise IndexMismatch(f"{at}: index is {describe(index)}, not an integer", at)
        if not 0 <= index < n_documents:
            raise IndexMismatch(f"{at}: index {index} is out of range for {n_documents} document(s)", at)
        if not math.isnan(scores[index]):
            raise IndexMismatch(f"{at}: index {index} appears twice; each document must come back once", at)
        scores[index] = _score(item, at)
        order.append(index)
    returned = [float(scores[i]) for i in order]
    if api.sorted_by_score:
        bad = next((k for k in range(1, len(returned)) if returned[k] > returned[k - 1]), None)
        if bad is not None:
            raise OrderMismatch(
                f"{where}: results are not sorted by score: results[{bad}] (index {order[bad]}, "
                f"{returned[bad]:.6g}) is above results[{bad - 1}] ({returned[bad - 1]:.6g}); the "
                f"{api.name} API returns the best first",
                f"results[{bad}]",
            )
    elif order != sorted(order):
        bad = next(k for k in range(len(order)) if order[k] != k)
        raise OrderMismatch(
            f"{where}: results[{bad}] has index {order[bad]}; the {api.name} API answers in request order",
            f"results[{bad}]",
        )
    return scores, order
