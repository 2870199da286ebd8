"""What a sweep produced: per-pass costs, the sweep's counters, and each cell's result against the base."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .compare import CORRECTION

if TYPE_CHECKING:
    from ..run.cache.results import ResultStore
    from ..run.result import Result
    from .axes import Axis
    from .choose import Choice
    from .compare import CellStats
    from .index_cells import IndexCell
    from .plan import Cell


@dataclass(frozen=True)
class PassRecord:
    """What one planned forward pass cost: texts that really went through the model, and time."""

    role: str
    dtype: str
    max_length: int
    prefix: str
    poolings: tuple[str, ...]
    texts: int
    texts_encoded: int
    tokens_encoded: int
    seconds: float

    def to_dict(self) -> dict[str, object]:
        return {
            "role": self.role,
            "dtype": self.dtype,
            "max_length": self.max_length,
            "prefix": self.prefix,
            "poolings": list(self.poolings),
            "texts": self.texts,
            "texts_encoded": self.texts_encoded,
            "tokens_encoded": self.tokens_encoded,
            "seconds": round(self.seconds, 4),
        }


@dataclass(frozen=True)
class SweepStats:
    passes: tuple[PassRecord, ...]
    models_loaded: int
    cache: dict[str, int] | None
    encode_seconds: float
    score_seconds: float
    contracts_scored: int
    result_cache: dict[str, object] | None = None  # contracts and cell statistics reused from it (None: --no-cache)

    @property
    def passes_by_role(self) -> dict[str, int]:
        """Forward passes planned per role (each serves every pooling and dim of its cells)."""
        out = {"query": 0, "document": 0}
        for p in self.passes:
            out[p.role] += 1
        return out

    @property
    def texts_encoded_by_role(self) -> dict[str, int]:
        """Texts that actually went through the model, per role (0 on a warm cache)."""
        out = {"query": 0, "document": 0}
        for p in self.passes:
            out[p.role] += p.texts_encoded
        return out

    def to_dict(self) -> dict[str, object]:
        return {
            "passes_by_role": self.passes_by_role,
            "texts_encoded_by_role": self.texts_encoded_by_role,
            "models_loaded": self.models_loaded,
            "cache": self.cache,
            "encode_seconds": round(self.encode_seconds, 4),
            "score_seconds": round(self.score_seconds, 4),
            "contracts_scored": self.contracts_scored,
            "result_cache": self.result_cache,
            "passes": [p.to_dict() for p in self.passes],
        }


@dataclass(frozen=True)
class CellResult:
    cell: Cell
    result: Result
    delta: dict[str, float]
    p_values: dict[str, float]
    stats: dict[str, CellStats] = field(default_factory=dict)  # per metric: CI, sign-flip p, MDE, BH q-value
    index: IndexCell | None = None  # set when the cell varies the index axis or its contract's index is not flat

    @property
    def name(self) -> str:
        return self.cell.name

    def significant(self, alpha: float) -> dict[str, bool]:
        """Per metric: the Benjamini-Hochberg adjusted p-value (uncorrected when no stats) below ``alpha``."""
        if self.stats:
            return {m: s.significant(alpha) for m, s in self.stats.items()}
        return {m: p < alpha for m, p in self.p_values.items()}


@dataclass(frozen=True)
class SweepResult:
    base: Result
    cells: list[CellResult]
    stats: SweepStats
    metrics: tuple[str, ...]
    axes: tuple[Axis, ...] = ()
    grid: bool = False
    test: str = "student"
    alpha: float = 0.05
    warnings: list[str] = field(default_factory=list)
    correction: str = CORRECTION  # of the ``*`` marks, across every cell and metric
    store: ResultStore | None = field(default=None, repr=False, compare=False)  # the result cache, for the reports
    derived: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)  # what reports computed once
    choice: Choice | None = None  # `--choose`: the cheapest cell non-inferior to the base (choose.py)

    def cell(self, name: str) -> CellResult:
        for c in self.cells:
            if c.cell.name == name:
                return c
        raise KeyError(f"no sweep cell named {name!r}; cells: {', '.join(c.cell.name for c in self.cells)}")
