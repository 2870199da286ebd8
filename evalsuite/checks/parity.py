"""Run against run: a served endpoint's whole-dataset run beside the reference's, metric by metric (any family).

A parity check (the same model under another engine), not a sampling question: the served run passes when
``|delta|`` of the primary metric (ndcg@10 where measured) is within a tolerance AND the mean per-query top-10
overlap with the reference's ranking is at least a threshold (an average delta can hide rankings that differ for a
quarter of the top results). Each delta is reported with its paired bootstrap CI for context. The embedding
canary's ``retrieval_agreement`` and the sparse canary's ``sparse_retrieval`` are both judged here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .measure import TOP_K_OVERLAP
from .outcome import CheckOutcome

Scores = Mapping[str, Mapping[str, float]]


class ScoredRun(Protocol):
    """What a run needs to be compared: its aggregate metrics, per-query scores and ranking."""

    @property
    def metrics(self) -> Mapping[str, float]: ...

    @property
    def per_query(self) -> Scores: ...

    @property
    def ranking(self) -> Scores: ...


def _top(ranking: Scores, qid: str, k: int) -> tuple[str, ...]:
    """The first ``k`` documents of ``qid`` in the documented tie order (a :class:`~evalsuite.retrieval.search.Ranking`)."""
    from ..retrieval.search import Ranking

    if isinstance(ranking, Ranking):
        return ranking.top(qid, k)
    return Ranking.from_scores({qid: ranking.get(qid, {})}).top(qid, k)


def rank_overlap(reference: Scores, endpoint: Scores, k: int = TOP_K_OVERLAP) -> dict[str, float]:
    """Per reference query: the share of its top-k documents that the endpoint's top-k also holds."""
    out = {}
    for qid in reference:
        ref_top = _top(reference, qid, k)
        out[qid] = len(set(ref_top) & set(_top(endpoint, qid, k))) / max(1, len(ref_top))
    return out


def paired_intervals(endpoint: Scores, reference: Scores, metrics: list[str]) -> dict[str, dict[str, float]]:
    """Per metric, the paired bootstrap CI of endpoint - reference over queries (context, not the verdict)."""
    from ..scoring.stats import compare, paired_scores

    if not metrics:
        return {}
    _, a, b = paired_scores(endpoint, reference, metrics)
    return {
        m: {"ci_low": round(c.ci.low, 6), "ci_high": round(c.ci.high, 6), "sign_flip_p": round(c.p_value, 6)}
        for m, c in zip(metrics, compare(a, b), strict=True)
    }


@dataclass(frozen=True)
class Parity:
    """The served run beside the reference's: the metrics both hold, each delta and its paired CI, the per-query
    top-10 overlap (``shared``) and its mean, the five queries that overlap least."""

    reference: ScoredRun
    served: ScoredRun
    metrics: list[str]
    primary: str
    deltas: dict[str, float]
    shared: dict[str, float]
    mean_overlap: float
    lowest: list[str]
    cis: dict[str, dict[str, float]]

    @classmethod
    def of(cls, reference: ScoredRun, served: ScoredRun) -> Parity:
        metrics = [m for m in reference.metrics if m in served.metrics]
        shared = rank_overlap(reference.ranking, served.ranking)
        return cls(
            reference=reference,
            served=served,
            metrics=metrics,
            primary="ndcg@10" if "ndcg@10" in metrics else metrics[0],
            deltas={m: served.metrics[m] - reference.metrics[m] for m in metrics},
            shared=shared,
            mean_overlap=sum(shared.values()) / max(1, len(shared)),
            lowest=sorted(shared, key=lambda q: (shared[q], q))[:5],
            cis=paired_intervals(served.per_query, reference.per_query, metrics),
        )

    def metric_details(self) -> dict[str, dict[str, float]]:
        """Per metric: the reference's, the endpoint's, the delta and its CI (canary.json's ``metrics``)."""
        return {
            m: {
                "reference": round(self.reference.metrics[m], 6),
                "endpoint": round(self.served.metrics[m], 6),
                "delta": round(self.deltas[m], 6),
                **self.cis.get(m, {}),
            }
            for m in self.metrics
        }

    def overlap_details(self, threshold: float) -> dict[str, Any]:
        return {
            "mean": round(self.mean_overlap, 4),
            "lowest": {q: self.shared[q] for q in self.lowest},
            "threshold": threshold,
        }

    def verdict(
        self,
        check: str,
        label: str,
        *,
        tolerance: float,
        min_overlap: float,
        details: dict[str, Any],
        served_word: str = "endpoint",
        others: bool = True,
    ) -> CheckOutcome:
        """The parity rule's verdict, named ``check`` and worded with ``label`` (``others``: the other metrics'
        deltas in the message too)."""
        p, ref, ep = self.primary, self.reference, self.served
        delta = self.deltas[p]
        ci = self.cis.get(p)
        ci_text = f" (95% CI {ci['ci_low']:+.4f} .. {ci['ci_high']:+.4f})" if ci else ""
        head = f"{p} {served_word} {ep.metrics[p]:.4f} vs reference {ref.metrics[p]:.4f}"
        rest = ", ".join(f"{m} {self.deltas[m]:+.4f}" for m in self.metrics if m != p)
        tail = (f"; others: {rest}" if others else "") + f"; mean top-{TOP_K_OVERLAP} overlap {self.mean_overlap:.3f}"
        worst = ", ".join(f"{q} ({self.shared[q]:.1f})" for q in self.lowest[:3])
        if abs(delta) > tolerance:
            return CheckOutcome(
                check,
                False,
                f"{label}: |delta {p}| {abs(delta):.4f} > {tolerance} ({head}{ci_text}){tail}; lowest overlap: {worst}",
                details,
            )
        if self.mean_overlap < min_overlap:
            return CheckOutcome(
                check,
                False,
                f"{label}: mean top-{TOP_K_OVERLAP} overlap {self.mean_overlap:.3f} < {min_overlap} although "
                f"|delta {p}| {abs(delta):.4f} is within {tolerance} ({head}{ci_text}); the rankings differ; lowest "
                f"overlap: {worst}",
                details,
            )
        return CheckOutcome(
            check,
            True,
            f"{label}: {head}, delta {delta:+.4f}{ci_text} within {tolerance}{tail} >= {min_overlap}",
            details,
        )
