"""A scored run: what `results.json` holds, and the in-memory extras (vectors, ranking)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import SpecError
from ..contract import Contract
from ..datasets import Dataset
from ..retrieval.search import Ranking
from ..retrieval.vectors import IntegrityReport
from ..slicing import SliceIndex, SliceRow

# The version of results.json. 2: a two-stage run writes both stages here (the first stage at the top, as every
# run, and ``reranked``: one entry per rerank depth); version 1 files came with rerank.json and
# first_stage/results.json beside them.
SCHEMA_VERSION = 2


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
    doc_integrity: IntegrityReport | None = field(default=None, repr=False)  # block-wise runs keep no doc vectors

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


def read_results(path: str | Path) -> dict[str, object]:
    """A ``results.json`` as written by this version; a file of another ``schema_version`` (or not results.json)
    is a :class:`SpecError` naming the file and what to do."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SpecError(f"{p}:{exc.lineno}: results.json is not valid JSON ({exc.msg}); rerun to rewrite it") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{p}: results.json cannot be read ({exc})") from None
    if not isinstance(data, dict):
        raise SpecError(f"{p}: results.json holds {type(data).__name__}, not an object; rerun to rewrite it")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        older = (
            " (an older evalsuite; its two-stage runs wrote rerank.json and first_stage/results.json instead)"
            if isinstance(version, int) and version < SCHEMA_VERSION
            else ""
        )
        raise SpecError(
            f"{p}: results.json schema_version {version!r}, expected {SCHEMA_VERSION}{older}; rerun the command "
            "with this evalsuite to rewrite it"
        )
    return data
