"""A served token-level output (vLLM ``POST /pooling`` with ``"task": "token_embed"``) against the local token
vectors, token by token. Requests go through the hardened endpoint client (``EndpointEncoder.request``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..encode.endpoint import EndpointEncoder
from ..encode.response import CountMismatch, DimensionMismatch, IndexMismatch, ResponseFormatError, describe


def parse_token_embeddings(payload: object, n: int, dim: int, where: str = "token_embed answer") -> list[np.ndarray]:
    """One [tokens, dim] matrix per input, in input order; a typed error for any violation."""
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
            raise IndexMismatch(f"{at}: index {describe(index)} is missing, out of range or repeated", at)
        rows = item.get("data")
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise ResponseFormatError(f"{at}: 'data' must be a list of token vectors, got {describe(rows)}", at)
        if any(len(r) != dim for r in rows):
            raise DimensionMismatch(f"{at}: token vectors must have {dim} values", at)
        if not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for r in rows for x in r
        ):
            raise ResponseFormatError(f"{at}: a token vector holds a value that is not a finite number", at)
        out[index] = np.array(rows, dtype=np.float32).reshape(len(rows), dim)
    return [m for m in out if m is not None]


def fetch_token_embeddings(http: EndpointEncoder, texts: Sequence[str], dim: int) -> list[np.ndarray]:
    body: dict[str, object] = {"input": list(texts), "task": "token_embed"}
    if http.config.model:
        body["model"] = http.config.model
    resp = http.request("POST", http.config.root_url("/pooling"), json=body, what=f"token_embed of {len(texts)} texts")
    if resp.status_code != 200:
        raise http.error_for(resp)
    return parse_token_embeddings(resp.json(), len(texts), dim, resp.what)


@dataclass(frozen=True)
class TokenAgreement:
    texts: int
    count_mismatches: tuple[tuple[int, int, int], ...]  # (input, served tokens, reference tokens)
    min_cosine: float
    mean_cosine: float

    def passed(self, min_cosine: float) -> bool:
        return not self.count_mismatches and self.min_cosine >= min_cosine

    def describe(self) -> str:
        if self.count_mismatches:
            i, s, r = self.count_mismatches[0]
            return (
                f"token counts differ for {len(self.count_mismatches)} of {self.texts} input(s) (input {i}: served "
                f"{s}, reference {r}): check which special tokens the server keeps and its max length"
            )
        return (
            f"{self.texts} input(s), same token counts; token cosine min {self.min_cosine:.6f}, mean "
            f"{self.mean_cosine:.6f}"
        )


def compare_tokens(served: Sequence[np.ndarray], reference: Sequence[np.ndarray]) -> TokenAgreement:
    mismatches = tuple(
        (i, len(s), len(r)) for i, (s, r) in enumerate(zip(served, reference, strict=True)) if len(s) != len(r)
    )
    cosines = []
    if len(served) != len(reference):
        raise CountMismatch(f"{len(served)} served token matrices for {len(reference)} reference ones")
    for s, r in zip(served, reference, strict=True):
        if len(s) != len(r) or len(s) == 0:
            continue
        num = (s * r).sum(axis=1)
        den = np.linalg.norm(s, axis=1) * np.linalg.norm(r, axis=1)
        cosines.extend((num / np.maximum(den, 1e-12)).tolist())
    return TokenAgreement(
        len(reference),
        mismatches,
        float(min(cosines)) if cosines else float("nan"),
        float(np.mean(cosines)) if cosines else float("nan"),
    )
