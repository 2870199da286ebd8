"""A scored run: what `results.json` holds, and the in-memory extras (vectors, ranking)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .contract import Contract
from .datasets import Dataset
from .search import Ranking
from .slicing import SliceIndex, SliceRow

SCHEMA_VERSION = 1


@dataclass
class Result:
    contract: Contract
    manifest: dict[str, Any]
    dataset: Dataset
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    timing: dict[str, Any]
    ranking: Ranking
    query_vectors: np.ndarray | None = field(default=None, repr=False)
    doc_vectors: np.ndarray | None = field(default=None, repr=False)
    warnings: list[str] = field(default_factory=list)
    slices: SliceIndex | None = field(default=None, repr=False)  # slice membership; None: not sliced

    def slice_rows(self) -> tuple[SliceRow, ...]:
        """Every reported slice with its metrics (empty when the run was not sliced)."""
        return self.slices.table(self.per_query) if self.slices is not None else ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "manifest": self.manifest,
            "dataset": self.dataset.identity.to_dict(),
            "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
            "per_query": {m: {q: round(s, 6) for q, s in scores.items()} for m, scores in self.per_query.items()},
            "timing": self.timing,
            "warnings": list(self.warnings),
            **({"slices": self.slices.to_dict(self.per_query)} if self.slices is not None else {}),
        }
