"""The cell to ship from a sweep's results: each cell's per-query scores and cost handed to :func:`.choose.choose`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.errors import SpecError
from .choose import Candidate, Choice, ChooseRule, choose

if TYPE_CHECKING:
    from .results import SweepResult


def cell_cost(rule: ChooseRule, contract: object, index_report: object, n_vectors: int) -> float | None:
    """A cell's cost: bytes per vector of its index (float32 for flat), its index's median latency, or its dim."""
    from ..retrieval.index.footprint import footprint
    from ..retrieval.index.spec import parse_index, resolve

    dim = int(contract.dim)  # type: ignore[attr-defined]
    if rule.cost == "dim":
        return float(dim)
    if rule.cost == "latency":
        return None if index_report is None else float(index_report.query_latency.p50_ms)  # type: ignore[attr-defined]
    resolved, _ = resolve(parse_index(contract.index), n_vectors, dim)  # type: ignore[attr-defined]
    return float(footprint(resolved, dim).bytes_per_vector)


def choose_cells(result: SweepResult, rule: ChooseRule) -> Choice:
    """The rule over a sweep's cells (those equal to the base are not candidates)."""
    from ..scoring.stats import paired_scores

    if rule.metric not in result.metrics:
        raise SpecError(f"--choose {rule.text}: {rule.metric} was not computed; add it to --metrics")
    n = len(result.base.dataset.doc_ids)
    base_cost = cell_cost(rule, result.base.contract, None, n) if rule.cost != "latency" else None
    candidates = []
    base_scores = None
    for c in result.cells:
        if c.cell.same_as_base:
            continue
        _, a, b = paired_scores(c.result.per_query, result.base.per_query, [rule.metric])
        base_scores = b[:, 0]
        report = c.index.report if c.index is not None else None
        candidates.append(Candidate(c.cell.name, a[:, 0], cell_cost(rule, c.result.contract, report, n)))
    if base_scores is None:
        _, b, _ = paired_scores(result.base.per_query, result.base.per_query, [rule.metric])
        base_scores = b[:, 0]
    return choose(rule, base_scores, base_cost, candidates)
