"""Reranker settings and the two-stage run: the pipeline's first stage, then the local reference reranker."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base.errors import SpecError
from ..base.settings import check_fields
from ..scoring.metrics import search_depth

if TYPE_CHECKING:
    from ..model import ModelInfo
    from ..run.pipeline import Prepared
    from ..run.result import Result
    from ..run.spec import RunSpec
    from .cache import CachedReranker
    from .contract import RerankerContract
    from .local import LocalReranker
    from .twostage import TwoStageResult


@dataclass(frozen=True)
class RerankSpec:
    """Reranker settings; ``None`` means what the model declares (activation, max length) or the pair template."""

    reranker: str | None = None
    reranker_rev: str | None = None
    reranker_tokenizer_rev: str | None = None
    activation: str | None = None
    template: str | None = None
    max_length: int | None = None
    truncation: str = "longest_first"
    dtype: str = "float32"
    depth: int = 100
    batch_size: int = 32

    def __post_init__(self) -> None:
        if not isinstance(self.depth, int) or self.depth < 1:
            raise SpecError(f"rerank depth {self.depth!r} must be an integer >= 1")

    def replace(self, **changes: Any) -> RerankSpec:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_mapping(cls, data: dict[str, Any], *, source: str) -> RerankSpec:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = [k for k in data if k.replace("-", "_") not in names]
        if unknown:
            raise SpecError(f"{source}: unknown reranker setting(s) {unknown}; known: {', '.join(sorted(names))}")
        check_fields(cls, data, source=source)
        return cls(**{k.replace("-", "_"): v for k, v in data.items()})


def resolve_reranker(rspec: RerankSpec) -> tuple[ModelInfo, RerankerContract]:
    """Locate and pin the reranker offline; its contract with every default resolved."""
    from ..model import resolve_model
    from .contract import build_reranker_contract

    if not rspec.reranker:
        raise SpecError("no reranker given; pass --reranker DIR (a cross-encoder directory or a cached hub id)")
    info = resolve_model(rspec.reranker, revision=rspec.reranker_rev, tokenizer_revision=rspec.reranker_tokenizer_rev)
    contract = build_reranker_contract(
        info,
        activation=rspec.activation,
        template=rspec.template,
        max_length=rspec.max_length,
        truncation=rspec.truncation,
        dtype=rspec.dtype,
    )
    return info, contract


def first_stage_spec(spec: RunSpec, depths: Sequence[int]) -> RunSpec:
    """``spec``, with a recall cutoff added when the deepest rerank depth needs a deeper first stage."""
    deepest = max(depths)
    if deepest <= search_depth(spec.metrics):
        return spec
    return spec.replace(metrics=(*spec.metrics, f"recall@{deepest}"))


def run_first_stage(spec: RunSpec, depths: Sequence[int]) -> tuple[Prepared, Result]:
    from ..run.pipeline import prepare, run

    spec = first_stage_spec(spec, depths)
    prepared = prepare(spec)
    return prepared, run(spec, prepared)


def make_reranker(info: ModelInfo, contract: RerankerContract, spec: RunSpec, rspec: RerankSpec) -> LocalReranker:
    from .local import LocalReranker

    return LocalReranker(
        info, contract, device=spec.device, batch_size=rspec.batch_size, trust_remote_code=spec.trust_remote_code
    )


def make_scorer(
    info: ModelInfo, contract: RerankerContract, spec: RunSpec, rspec: RerankSpec
) -> LocalReranker | CachedReranker:
    """The local reference behind the reranker score cache when the cache is on (``--cache-dir``, ``--no-cache``:
    the embedding cache's settings); the model loads on the first miss, never before."""
    if not spec.use_cache:
        return make_reranker(info, contract, spec, rspec)
    from .cache import CachedReranker, ScoreCache

    return CachedReranker(ScoreCache(spec.cache_dir), contract, lambda: make_reranker(info, contract, spec, rspec))


def run_two_stage(
    spec: RunSpec, rspec: RerankSpec, depths: Sequence[int] | None = None, first: Result | None = None
) -> list[TwoStageResult]:
    """First stage (unless given) once, then the local reference reranker at every depth."""
    depths = list(depths or [rspec.depth])
    info, contract = resolve_reranker(rspec)  # pinning errors before any encoding
    if first is None:
        _, first = run_first_stage(spec, depths)
    return rerank_first_stage(first, make_scorer(info, contract, spec, rspec), info, depths)


def rerank_first_stage(
    first: Result, scorer: LocalReranker | CachedReranker, info: ModelInfo, depths: Sequence[int]
) -> list[TwoStageResult]:
    """A reranker (the local reference, or it behind the score cache) over a first stage, at every depth
    (one scoring of the deepest one's pairs)."""
    from .twostage import evaluate_depths

    results = evaluate_depths(first, scorer.contract, scorer.score, depths, list(first.metrics))
    for r in results:
        r.timing["reranker"] = scorer.stats.to_dict()
        r.timing["reranker_model"] = info.to_dict()
    return results
