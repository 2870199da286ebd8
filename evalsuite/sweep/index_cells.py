"""Sweep cells that vary the index: search the cell's vectors with its index, measured against the
exact flat search of the same vectors (same forward pass, same dim), and compared with it per query."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..retrieval.vectors import finalize
from ..run.record import manifest
from ..run.result import Result
from ..scoring.metrics import evaluate, paired_test

if TYPE_CHECKING:
    import numpy as np

    from ..contract import Contract
    from ..retrieval.index.measure import IndexReport
    from ..run.pipeline import Prepared
    from ..scoring.stats import Comparison


@dataclass(frozen=True)
class IndexCell:
    """A cell's index: its report, and per metric its comparison with exact search over the same
    vectors (``flat_fingerprint`` names that contract): delta with a paired bootstrap CI, sign-flip
    p-value and minimum detectable effect (:func:`evalsuite.scoring.stats.compare`), and the sweep's ranx test."""

    report: IndexReport
    flat_fingerprint: str
    vs_flat: Mapping[str, Comparison]
    p_vs_flat: Mapping[str, float]

    @property
    def delta_vs_flat(self) -> dict[str, float]:
        return {m: c.ci.delta for m, c in self.vs_flat.items()}

    def to_dict(self) -> dict[str, object]:
        return dict(
            self.report.to_dict(),
            flat_contract_fingerprint=self.flat_fingerprint,
            delta_vs_flat={m: round(v, 6) for m, v in self.delta_vs_flat.items()},
            vs_flat={m: c.to_dict() for m, c in self.vs_flat.items()},
            p_vs_flat={m: round(v, 6) for m, v in self.p_vs_flat.items()},
        )


def score_index(
    prepared: Prepared,
    contract: Contract,
    q_pooled: np.ndarray,
    d_pooled: np.ndarray,
    exact: Result,
    *,
    metrics: Sequence[str],
    timing: Mapping[str, object],
    device: str,
    keep_vectors: bool = False,
) -> tuple[Result, IndexReport]:
    """Search ``contract``'s vectors with its index and score the ranking; ``exact`` is the flat
    result of the same vectors (its ranking is the ground truth of recall). For a flat contract
    the result is ``exact`` itself and only the measurements are new."""
    from ..run.pipeline import measure_index

    ds = prepared.dataset
    qv = finalize(q_pooled, contract.dim, contract.normalize)
    dv = finalize(d_pooled, contract.dim, contract.normalize)
    run = measure_index(ds, contract, qv, dv, metrics, exact.ranking)
    if contract.index == exact.contract.index:
        return exact, run.report
    aggregate, per_query = evaluate(ds.qrels, run.ranking, metrics)
    man = manifest(prepared, contract, device=device, run_id=uuid.uuid4().hex[:12])
    man["index"] = dict(man["index"], **run.report.manifest_entry())
    index_timing = {
        "build_seconds": round(run.report.build_seconds, 4),
        "query_p50_ms": round(run.report.query_latency.p50_ms, 4),
    }
    result = Result(
        contract=contract,
        manifest=man,
        dataset=ds,
        metrics=aggregate,
        per_query=per_query,
        timing=dict(timing, index=index_timing),
        ranking=run.ranking,
        query_vectors=qv if keep_vectors else None,
        doc_vectors=dv if keep_vectors else None,
        warnings=list(ds.warnings),
    )
    return result, run.report


def compare_with_flat(
    report: IndexReport, result: Result, flat: Result, metrics: Sequence[str], *, test: str, alpha: float
) -> IndexCell:
    """``result`` (an index's) against ``flat`` (exact search over the same vectors), per metric, over
    the queries both scored."""
    from ..scoring.stats import compare, paired_scores

    _, a, b = paired_scores(result.per_query, flat.per_query, list(metrics))
    vs_flat = dict(zip(metrics, compare(a, b), strict=True))
    p = {m: paired_test(flat.per_query[m], result.per_query[m], test=test, alpha=alpha) for m in metrics}
    return IndexCell(report, flat.contract.fingerprint(), vs_flat, p)
