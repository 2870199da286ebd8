"""Vectors exactly as a contract says (prefix, pooling, dim, normalize), from a pooled encoder.

This is what users' own tests (the ``evalsuite_encoder`` fixture) and the canary compare with.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..contract import Contract
from ..retrieval.vectors import finalize
from .base import Encoder


class ContractEncoder:
    def __init__(self, encoder: Encoder, contract: Contract) -> None:
        self.encoder = encoder
        self.contract = contract

    def embed(self, texts: Sequence[str], role: str = "query") -> np.ndarray:
        c = self.contract
        pooled = self.encoder.encode(c.render_all(role, texts), poolings=[c.pooling], role=role)
        return finalize(pooled[c.pooling], c.dim, c.normalize)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts, "query")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts, "document")

    def similarity(self, query: str, document: str) -> float:
        """Similarity of one query and one document under the contract (higher is closer)."""
        q, d = self.embed_queries([query])[0], self.embed_documents([document])[0]
        if self.contract.similarity == "l2":
            return -float(np.sum((q - d) ** 2))
        return float(q @ d)
