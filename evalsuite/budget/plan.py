"""The deployed pipeline declared once, checked before anything is encoded: the reference and production
contracts, the index split into its compression and its approximate search, the built index opened as the audit
opens it. A stage that cannot be built as declared is a :class:`~evalsuite.base.errors.BudgetStageError` here,
before the first forward pass."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..base.errors import BudgetStageError, EvalsuiteError
from ..retrieval.index.spec import parse_index, resolve
from ..retrieval.retrievers.spec import DENSE
from .config import REFERENCE_DTYPE, Config
from .layout import IndexLayout
from .stages import BUDGET_STAGES

if TYPE_CHECKING:
    from ..audit.source import IndexSource, SourceOptions
    from ..contract import Contract
    from ..rerank.run import RerankSpec
    from ..run.prepared import Prepared
    from ..run.spec import RunSpec

ATTRIBUTIONS = ("sequential", "shapley")
HYBRID_SKIP = "not declared: production ranks with the dense vectors alone (--retrieval hybrid or bm25 to declare it)"


@dataclass(frozen=True)
class BudgetPlan:
    """Everything the budget computes from: the checked local inputs, the two contracts, and each stage's input."""

    prepared: Prepared  # the local reference's inputs (no endpoint; contract: the reference)
    reference: Contract  # float32, full dimension, exact search
    production: Contract  # the declared deployment's contract (dtype, dim, index)
    layout: IndexLayout
    metrics: tuple[str, ...]
    attribution: str = "sequential"
    endpoints: tuple[str, ...] = ()
    served_spec: RunSpec | None = None  # how to call the endpoint (the run's client settings)
    index_uri: str | None = None
    source: IndexSource | None = field(default=None, repr=False, compare=False)
    reranker: RerankSpec | None = None  # the cross-encoder over the top N (its depth in ``reranker.depth``)
    hybrid_skip: str | None = HYBRID_SKIP
    index_notes: tuple[str, ...] = ()  # what building the declared index for this corpus changed

    @property
    def reference_config(self) -> Config:
        return Config(dim=self.reference.dim)

    @property
    def store_dim(self) -> int:
        return self.source.info().dim if self.source is not None else self.production.dim

    @property
    def declared(self) -> tuple[str, ...]:
        """The stages this deployment declares, in pipeline order."""
        return tuple(s.name for s in BUDGET_STAGES if s.declared(self) is None)

    def close(self) -> None:
        if self.source is not None:
            self.source.close()


def make_plan(
    spec: RunSpec,
    *,
    index_uri: str | None = None,
    source_options: SourceOptions | None = None,
    attribution: str = "sequential",
    reranker: RerankSpec | None = None,
) -> BudgetPlan:
    """Check every declared stage and open the built index; raises BudgetStageError naming the stage."""
    from ..contract import build_contract
    from ..run.prepared import prepare

    if attribution not in ATTRIBUTIONS:
        raise BudgetStageError("attribution", f"{attribution!r} is not one of {', '.join(ATTRIBUTIONS)}")
    from ..retrieval.retrievers import RETRIEVAL_SETTINGS
    from ..run.spec import ENDPOINT_SETTINGS, RunSpec

    client_defaults = {f.name: f.default for f in dataclasses.fields(RunSpec) if f.name in ENDPOINT_SETTINGS}
    retrieval_defaults = {
        f.name: f.default for f in dataclasses.fields(RunSpec) if f.name in ("retrieval", *RETRIEVAL_SETTINGS)
    }
    local = spec.replace(
        endpoints=(),
        dtype=REFERENCE_DTYPE,
        dim=None,
        index="flat",
        chunk_size=0,
        **client_defaults,
        **retrieval_defaults,
    )  # the local reference: no endpoint and none of its client settings, dense retrieval
    prepared = prepare(local)
    info = prepared.model
    if spec.dim is not None and spec.dim > info.hidden_size:
        raise BudgetStageError(
            "dimension",
            f"--dim {spec.dim} is larger than the model's output dimension {info.hidden_size}; "
            f"pass --dim {info.hidden_size} or less",
        )
    try:
        production = build_contract(spec, info)
    except EvalsuiteError as exc:
        raise BudgetStageError("dimension" if spec.dim else "precision", str(exc)) from None
    _check_pq(production.index, production.dim)
    resolved, index_notes = resolve(parse_index(production.index), len(prepared.dataset.doc_ids), production.dim)
    layout = IndexLayout.of(resolved.text)  # as built for this corpus: the labels say what is really searched
    if reranker is not None:
        from ..rerank.run import resolve_reranker

        try:
            resolve_reranker(reranker)  # pinned and its contract checked before any encoding
        except EvalsuiteError as exc:
            raise BudgetStageError("reranker", str(exc)) from None
    source = _open_store(index_uri, source_options, production.dim) if index_uri else None
    return BudgetPlan(
        prepared=prepared,
        reference=prepared.contract,
        production=production,
        layout=layout,
        metrics=tuple(spec.metrics),
        attribution=attribution,
        endpoints=tuple(spec.endpoints),
        served_spec=spec.replace(chunk_size=0, dim=None, index="flat") if spec.endpoints else None,
        index_uri=index_uri,
        source=source,
        reranker=reranker,
        hybrid_skip=None if production.retrieval != DENSE else HYBRID_SKIP,
        index_notes=tuple(f"index {production.index}: {n}" for n in index_notes),
    )


def _check_pq(index: str, dim: int) -> None:
    spec = parse_index(index)
    m = dict(spec.params).get("m") if spec.kind == "ivfpq" else None
    if m is not None and dim % m:
        divisors = [k for k in range(1, dim + 1) if dim % k == 0 and k <= m]
        raise BudgetStageError(
            "compression",
            f"PQ m={m} does not divide the dimension {dim}: each of the m sub-vectors must have the same length; "
            f"pass m={divisors[-1]} (or another divisor of {dim})",
        )


def _open_store(uri: str, options: SourceOptions | None, dim: int) -> IndexSource:
    from ..audit.stores import open_source

    try:
        source = open_source(uri, options)
        info = source.info()
    except EvalsuiteError as exc:
        raise BudgetStageError("index", f"{exc}; pass --index-uri a store `evalsuite audit` can open") from None
    if info.dim != dim:
        source.close()
        raise BudgetStageError(
            "index",
            f"{info.location} stores {info.dim}-dimension vectors but the deployment declares {dim} "
            f"(--dim); declare --dim {info.dim} or audit the index that production searches",
        )
    return source
