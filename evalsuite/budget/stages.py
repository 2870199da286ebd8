"""The stages of the loss budget, one declaration each, in the order the deployed pipeline applies them.

A stage changes one thing of a :class:`Config` (where the vectors come from, their precision, their dimension,
the index that searches them: its compression and its approximate search, :class:`~.plan.IndexLayout`, what comes after the ranking). The reference is the :class:`Config` with no stage
applied: the local model in float32, full dimension, exact search. Production is every declared stage applied
in :data:`BUDGET_STAGES` order; any subset of the declared stages is a configuration too (what the Shapley
attribution averages over), so :meth:`BudgetStage.apply` must work on any configuration, not only the
previous stage's.

Two stages can cover another: a served engine computes in its own precision (``served`` covers ``precision``),
and an index as built holds its own vectors and search (``index`` covers ``compression`` and ``ann``, and fixes
the dimension to the one it stores). :meth:`Config.key` drops what is covered, so equal configurations are
computed once.

How to add a stage: one :class:`BudgetStage` subclass here (``declared`` says why it is skipped when its input
is missing, ``apply`` changes the configuration, ``describe`` and ``knob`` feed the sentence), placed in
:data:`BUDGET_STAGES` where the pipeline applies it, and what it changes handled in :mod:`.compute`.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from .config import REFERENCE_DTYPE, Config

if TYPE_CHECKING:
    from ..contract import Contract
    from ..rerank.run import RerankSpec
    from .layout import IndexLayout


class BudgetPlan(Protocol):
    """What a stage reads of the declared deployment (:class:`evalsuite.budget.plan.BudgetPlan`)."""

    @property
    def reference(self) -> Contract: ...
    @property
    def production(self) -> Contract: ...
    @property
    def layout(self) -> IndexLayout: ...
    @property
    def endpoints(self) -> tuple[str, ...]: ...
    @property
    def index_uri(self) -> str | None: ...
    @property
    def reranker(self) -> RerankSpec | None: ...
    @property
    def hybrid_skip(self) -> str | None: ...
    @property
    def store_dim(self) -> int: ...
    @property
    def reference_config(self) -> Config: ...


@dataclass(frozen=True)
class BudgetStage(ABC):
    """One stage: its name (``budget.json``'s ``name``, the gate's ``[stage=NAME]``) and what it changes."""

    name: str
    changes: str  # one line for people: what this stage changes
    gain: ClassVar[bool] = False  # a stage expected to add quality (fusion, reranking), not lose it

    @abstractmethod
    def declared(self, plan: BudgetPlan) -> str | None:
        """None when the deployment declares this stage; otherwise why it is skipped (said in the reports)."""

    @abstractmethod
    def apply(self, config: Config, plan: BudgetPlan) -> Config:
        """``config`` with this stage's change made."""

    @abstractmethod
    def describe(self, plan: BudgetPlan) -> str:
        """The stage as the sentence names it: ``the cut to 128 dimensions``."""

    def knob(self, plan: BudgetPlan) -> str:
        """What to change first when this stage costs the most."""
        return self.name


class Precision(BudgetStage):
    def declared(self, plan: BudgetPlan) -> str | None:
        if plan.production.dtype == REFERENCE_DTYPE:
            return "not declared: production computes in float32, as the reference does (--dtype to declare it)"
        return None

    def apply(self, config: Config, plan: BudgetPlan) -> Config:
        return dataclasses.replace(config, dtype=plan.production.dtype)

    def describe(self, plan: BudgetPlan) -> str:
        return f"{plan.production.dtype} precision"

    def knob(self, plan: BudgetPlan) -> str:
        return "--dtype (compute in float32)"


class Served(BudgetStage):
    def declared(self, plan: BudgetPlan) -> str | None:
        if not plan.endpoints:
            return "not measured: no served encoder declared (--endpoint URL to measure the engine)"
        return None

    def apply(self, config: Config, plan: BudgetPlan) -> Config:
        return dataclasses.replace(config, served=True)

    def describe(self, plan: BudgetPlan) -> str:
        return "the served engine"

    def knob(self, plan: BudgetPlan) -> str:
        return "the served engine (run `evalsuite canary` for the diagnosis)"


class Dimension(BudgetStage):
    def declared(self, plan: BudgetPlan) -> str | None:
        if plan.production.dim == plan.reference.dim:
            return f"not declared: production keeps all {plan.reference.dim} dimensions (--dim N to declare a cut)"
        return None

    def apply(self, config: Config, plan: BudgetPlan) -> Config:
        return dataclasses.replace(config, dim=plan.production.dim)

    def describe(self, plan: BudgetPlan) -> str:
        return f"the cut to {plan.production.dim} dimensions"

    def knob(self, plan: BudgetPlan) -> str:
        return f"--dim (keep more than {plan.production.dim})"


class Compression(BudgetStage):
    def declared(self, plan: BudgetPlan) -> str | None:
        if plan.layout.compression is None:
            return f"not declared: the index {plan.production.index} keeps float32 vectors (--index sq8, ivfpq, binary)"
        return None

    def apply(self, config: Config, plan: BudgetPlan) -> Config:
        return dataclasses.replace(config, compressed=True)

    def describe(self, plan: BudgetPlan) -> str:
        return f"{plan.layout.compression_label} compression"

    def knob(self, plan: BudgetPlan) -> str:
        return f"the compression ({plan.layout.compression_label}; +rescore=R re-scores exactly)"


class ApproximateSearch(BudgetStage):
    def declared(self, plan: BudgetPlan) -> str | None:
        if plan.layout.ann is None:
            return f"not declared: the index {plan.production.index} searches exhaustively (--index hnsw, ivf, ivfpq)"
        return None

    def apply(self, config: Config, plan: BudgetPlan) -> Config:
        return dataclasses.replace(config, approximate=True)

    def describe(self, plan: BudgetPlan) -> str:
        return f"the {plan.layout.ann_label} search"

    def knob(self, plan: BudgetPlan) -> str:
        return plan.layout.ann_knob


class BuiltIndex(BudgetStage):
    def declared(self, plan: BudgetPlan) -> str | None:
        if plan.index_uri is None:
            return "not measured: no built index declared (--index-uri URI, read as `evalsuite audit` reads it)"
        return None

    def apply(self, config: Config, plan: BudgetPlan) -> Config:
        return dataclasses.replace(config, store=True, dim=plan.store_dim)

    def describe(self, plan: BudgetPlan) -> str:
        return "the index as built"

    def knob(self, plan: BudgetPlan) -> str:
        return "the index as built (run `evalsuite audit` for stale, missing or shifted vectors)"


class Hybrid(BudgetStage):
    gain = True

    def declared(self, plan: BudgetPlan) -> str | None:
        return plan.hybrid_skip

    def apply(self, config: Config, plan: BudgetPlan) -> Config:
        return dataclasses.replace(config, hybrid=True)

    def describe(self, plan: BudgetPlan) -> str:
        from ..retrieval.retrievers import parse_retrieval

        spec = parse_retrieval(plan.production.retrieval)
        if spec.kind != "hybrid":
            return f"the {spec.kind} retriever instead of the dense vectors"
        p = spec.to_dict()
        fused = p.get("fuse")
        parts = "+".join(str(x) for x in fused) if isinstance(fused, list) else "its retrievers"
        return f"hybrid fusion ({p.get('fusion')} of {parts})"

    def knob(self, plan: BudgetPlan) -> str:
        return "the retrieval (--retrieval, --fusion, --fusion-weights)"


class Reranker(BudgetStage):
    gain = True

    def declared(self, plan: BudgetPlan) -> str | None:
        if plan.reranker is None:
            return "not declared: no reranker (--reranker DIR to measure its gain)"
        return None

    def apply(self, config: Config, plan: BudgetPlan) -> Config:
        return dataclasses.replace(config, reranker=True)

    def describe(self, plan: BudgetPlan) -> str:
        r = plan.reranker
        return f"the reranker over the top {r.depth}" if r is not None else "the reranker"

    def knob(self, plan: BudgetPlan) -> str:
        return "the reranker (its model, --rerank-depth)"


# in the order the deployed pipeline applies them; the precision comes before the served engine: an engine serves
# at a dtype, so the served stage is charged what the engine adds beyond the local model at that dtype (the
# canary's comparison)
BUDGET_STAGES: tuple[BudgetStage, ...] = (
    Precision("precision", "the forward pass's dtype (--dtype)"),
    Served("served", "the served engine's vectors instead of the local model's (--endpoint)"),
    Dimension("dimension", "the Matryoshka cut to --dim, re-normalized"),
    Compression("compression", "compressed vectors (SQ8, PQ, binary; exact re-scoring where declared)"),
    ApproximateSearch("ann", "approximate search with the index's own parameters (HNSW, IVF)"),
    BuiltIndex("index", "the index as built, searched as deployed (--index-uri)"),
    Hybrid("hybrid", "fusion with a lexical retriever (--retrieval)"),
    Reranker("reranker", "a cross-encoder over the top N (--reranker)"),
)
STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in BUDGET_STAGES)


def stage(name: str) -> BudgetStage:
    for s in BUDGET_STAGES:
        if s.name == name:
            return s
    from ..base.errors import SpecError

    raise SpecError(f"unknown budget stage {name!r}; the stages are {', '.join(STAGE_NAMES)}")


def configure(stages: frozenset[str], plan: BudgetPlan) -> Config:
    """The configuration with ``stages`` applied in pipeline order to the reference."""
    config = plan.reference_config
    for s in BUDGET_STAGES:
        if s.name in stages:
            config = s.apply(config, plan)
    return config
