"""A gated session's second stage: the reranker pinned before anything is encoded, the local reference
cross-encoder loaded once per process, and the reranked stage of a side computed from its first stage."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .stages import RerankedStage

if TYPE_CHECKING:
    from ..rerank.cache import CachedReranker
    from ..rerank.local import LocalReranker
    from ..rerank.run import RerankSpec
    from ..run.result import Result
    from ..run.spec import RunSpec


class SessionReranker:
    def __init__(self, spec: RerankSpec) -> None:
        from ..rerank.run import resolve_reranker

        self.spec = spec
        self.info, self.contract = resolve_reranker(spec)  # a wrong revision stops the session now
        self._loaded: LocalReranker | CachedReranker | None = None

    @property
    def depth(self) -> int:
        return self.spec.depth

    def rerank(self, first: Result, run_spec: RunSpec) -> RerankedStage:
        """The reranked stage over ``first`` (``run_spec`` gives the device and whether remote code may run)."""
        from ..rerank.run import make_scorer, rerank_first_stage

        if self._loaded is None:  # behind the reranker score cache when the run's cache is on
            self._loaded = make_scorer(self.info, self.contract, run_spec, self.spec)
        (result,) = rerank_first_stage(first, self._loaded, self.info, [self.spec.depth])
        return RerankedStage.from_two_stage(result)

    def problems(self, stage: RerankedStage, label: str = "baseline") -> list[str]:
        """Why ``stage`` (a baseline's) is not comparable with what this reranker gives (empty: it is)."""
        return stage.problems(self.contract, self.spec.depth, label)
