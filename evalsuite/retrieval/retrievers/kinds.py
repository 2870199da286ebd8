"""Every retriever, declared once: its name, its parameters, what it needs and how it ranks.

A run's candidate ranking comes from the contract's retriever (``Contract.retrieval``, canonical text parsed by
:mod:`.spec`): ``dense`` (the contract's vectors searched exactly with FAISS: what every run did before
retrievers were declared), ``sparse`` (learned lexical weights), ``bm25`` (bm25s over the corpus texts,
:mod:`.bm25`), ``multivector`` (MaxSim over token vectors, :mod:`evalsuite.retrieval.maxsim`) and ``hybrid`` (ranx's
``fuse`` of two or more of the others, :mod:`.fusion`). Everything after the ranking (metrics, per-query
scores, gates, A/B, history, reports) is the same whatever produced it.

How to add a retriever (e.g. ``sparse``):

1. Declare one :class:`RetrieverKind` subclass here: its parameters (:class:`~.params.Param`, each with the
   spec key and flag that set it), ``needs_vectors`` (whether the contract's dense vectors must be encoded),
   ``fusable`` (whether a hybrid may fuse it), and :meth:`~RetrieverKind.retrieve`; list it in
   :data:`RETRIEVERS`.
2. Add its test in ``tests/retrieval/`` (its ranking against an independent computation).

``--retrieval``, the spec key, the ``retrieval`` sweep axis, the help texts and the reports read the registry.

An installed package adds a retriever from outside with an entry point in the group ``evalsuite.retrievers``
(:mod:`evalsuite.base.plugins`) naming its :class:`RetrieverKind` subclass or instance: ``--retrieval NAME`` (or
``NAME:PARAM=VALUE,...``) then ranks with it. Its name must be none of the built-ins' (a PluginError naming the
entry point otherwise); its parameters are set in the retrieval text only (flags and spec keys are the built-ins'),
and a hybrid fuses the built-in retrievers only.
bm25s and ranx are imported inside :meth:`retrieve`, never at import time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ...base.errors import SpecError
from .params import BM25_METHODS, FUSION_NAMES, NORMS, SPECIAL_POLICIES, STOPWORDS, Param
from .value import RetrievalInputs, RetrievalSpec, Retrieved

if TYPE_CHECKING:
    from ..search import Ranking


@dataclass(frozen=True)
class RetrieverKind(ABC):
    """One retriever. ``params``: its own, in canonical order."""

    name: str
    explanation: str
    params: tuple[Param, ...] = ()

    fusable: ClassVar[bool] = True  # a hybrid may fuse it

    def needs_vectors(self, spec: RetrievalSpec) -> bool:
        """Whether the contract's dense vectors are encoded for it."""
        return False

    @abstractmethod
    def retrieve(self, spec: RetrievalSpec, inputs: RetrievalInputs, k: int) -> Retrieved:
        """The top ``k`` documents of every query, in the documented tie order (:mod:`evalsuite.retrieval.search`)."""


@dataclass(frozen=True)
class Dense(RetrieverKind):
    def needs_vectors(self, spec: RetrievalSpec) -> bool:
        return True

    def retrieve(self, spec: RetrievalSpec, inputs: RetrievalInputs, k: int) -> Retrieved:
        return Retrieved(inputs.dense(k))


@dataclass(frozen=True)
class Sparse(RetrieverKind):
    def retrieve(self, spec: RetrievalSpec, inputs: RetrievalInputs, k: int) -> Retrieved:
        return inputs.sparse(int(spec.get("top_k")), k)  # type: ignore[arg-type]


@dataclass(frozen=True)
class BM25(RetrieverKind):
    def retrieve(self, spec: RetrievalSpec, inputs: RetrievalInputs, k: int) -> Retrieved:
        from .bm25 import BM25Settings, bm25_ranking

        settings = BM25Settings.of(spec)
        ranking, entry = bm25_ranking(settings, inputs, k)
        return Retrieved(ranking, entry={"bm25": entry})


@dataclass(frozen=True)
class Multivector(RetrieverKind):
    def needs_vectors(self, spec: RetrievalSpec) -> bool:
        return int(spec.get("rerank")) > 0  # type: ignore[arg-type]  # it re-ranks the dense run

    def retrieve(self, spec: RetrievalSpec, inputs: RetrievalInputs, k: int) -> Retrieved:
        v = spec.values
        return inputs.multivector(str(v["projection"]), str(v["specials"]), int(v["rerank"]), k)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Hybrid(RetrieverKind):
    fusable: ClassVar[bool] = False

    def needs_vectors(self, spec: RetrievalSpec) -> bool:
        return any(retriever(n).needs_vectors(component_spec(spec, n)) for n in spec.components)

    def retrieve(self, spec: RetrievalSpec, inputs: RetrievalInputs, k: int) -> Retrieved:
        from .fusion import fuse_rankings

        depth = int(spec.get("depth"))  # type: ignore[arg-type]
        runs: dict[str, Ranking] = {}
        entry: dict[str, object] = {}
        for name in spec.components:
            part = retriever(name).retrieve(component_spec(spec, name), inputs, depth)
            runs[name] = part.ranking
            entry.update(part.entry)
        fused = fuse_rankings(spec, runs, k)
        return Retrieved(fused, components=runs, entry=entry)


BM25_PARAMS: tuple[Param, ...] = (
    Param("k1", "bm25_k1", "float", 1.5, "BM25's term-frequency saturation k1 (bm25s's default 1.5)", minimum=0.0),
    Param("b", "bm25_b", "float", 0.75, "BM25's length normalisation b, 0 to 1", minimum=0.0, maximum=1.0),
    Param("method", "bm25_method", "choice", "lucene", "the BM25 variant (bm25s's method)", choices=BM25_METHODS),
    Param(
        "stopwords",
        "bm25_stopwords",
        "choice",
        "en",
        "the stop-word list removed by bm25s.tokenize (none: keep every word)",
        choices=STOPWORDS,
    ),
    Param(
        "stemmer",
        "bm25_stemmer",
        "word",
        "none",
        "a PyStemmer algorithm (english, porter, ...; pip install PyStemmer), or none",
    ),
)
SPARSE_PARAMS: tuple[Param, ...] = (
    Param(
        "top_k",
        "sparse_top_k",
        "int",
        0,
        "keep each query's and document's N largest sparse weights (0: all; the model's max_active_dims first)",
        minimum=0,
    ),
)
MULTIVECTOR_PARAMS: tuple[Param, ...] = (
    Param(
        "rerank",
        "multivector_rerank",
        "int",
        0,
        "0: MaxSim over the whole corpus (a first stage); N: MaxSim re-ranks the dense run's top N",
        minimum=0,
    ),
    Param(
        "projection",
        "multivector_projection",
        "choice",
        "auto",
        "auto: the model's colbert_linear.pt when it has one (BGE-M3), else the hidden states; none: the hidden states",
        choices=("auto", "none"),
    ),
    Param(
        "specials",
        "multivector_specials",
        "choice",
        "drop",
        "the special tokens' vectors: drop them, keep them, or keep only the first ([CLS])",
        choices=SPECIAL_POLICIES,
    ),
)
FUSABLE_NAMES = ("dense", "sparse", "bm25", "multivector")
HYBRID_PARAMS: tuple[Param, ...] = (
    Param("fuse", "fuse", "names", ("dense", "bm25"), "the retrievers fused, two or more", choices=FUSABLE_NAMES),
    Param("fusion", "fusion", "choice", "rrf", "how ranx fuses them", choices=FUSION_NAMES),
    Param("k", "fusion_k", "int", 60, "RRF's k (rrf only)", minimum=1),
    Param("weights", "fusion_weights", "floats", None, "one weight per fused retriever (wsum only)", minimum=0.0),
    Param("norm", "fusion_norm", "choice", "min-max", "ranx's score normalisation (score fusions)", choices=NORMS),
    Param("depth", "fusion_depth", "int", 100, "documents per query of each component run that is fused", minimum=1),
)

RETRIEVERS: tuple[RetrieverKind, ...] = (
    Dense("dense", "the contract's vectors searched exactly (FAISS; the contract's index when it names one)"),
    Sparse(
        "sparse",
        "the model's learned sparse weights (SPLADE's MLM head or BGE-M3's sparse_linear), exact dot product over "
        "an inverted index",
        SPARSE_PARAMS,
    ),
    BM25(
        "bm25",
        "lexical BM25 over the document texts (bm25s; its tokenizer, stop words, stemmer, k1, b, variant)",
        BM25_PARAMS,
    ),
    Multivector(
        "multivector",
        "late interaction: MaxSim over per-token vectors (the hidden states, or BGE-M3's colbert_linear), a first "
        "stage or a re-ranking of the dense run",
        MULTIVECTOR_PARAMS,
    ),
    Hybrid("hybrid", "ranx's fusion of two or more retrievers' runs (default: RRF of dense and bm25)", HYBRID_PARAMS),
)
RETRIEVER_NAMES: tuple[str, ...] = tuple(r.name for r in RETRIEVERS)
if tuple(r.name for r in RETRIEVERS if r.fusable) != FUSABLE_NAMES:  # pragma: no cover - a declaration error
    raise RuntimeError("FUSABLE_NAMES must list the fusable retrievers in RETRIEVERS order")


def retrievers() -> tuple[RetrieverKind, ...]:
    """The built-in retrievers, then the plug-ins' (entry points ``evalsuite.retrievers``, read once per process; a
    broken one, or one taking a built-in's name, is a PluginError naming its entry point)."""
    from ...base import plugins

    return RETRIEVERS + plugins.cached(plugins.RETRIEVERS, RetrieverKind, RETRIEVER_NAMES)


def retriever(name: str) -> RetrieverKind:
    """The declaration of retriever ``name`` (a built-in, or a plug-in's); :class:`SpecError` naming the valid
    ones otherwise."""
    wanted = name.strip().lower()
    kinds = retrievers()
    for kind in kinds:
        if kind.name == wanted:
            return kind
    raise SpecError(f"retrieval {name!r} is not a retriever; choose one of {', '.join(k.name for k in kinds)}")


def all_params() -> tuple[Param, ...]:
    """Every retriever parameter once (a spec key and flag each)."""
    seen: dict[str, Param] = {}
    for r in RETRIEVERS:
        for p in r.params:
            seen.setdefault(p.setting, p)
    return tuple(seen.values())


def retrieval_param(setting: str) -> Param:
    """The parameter a spec key or flag (``bm25_k1``) sets."""
    for p in all_params():
        if p.setting == setting:
            return p
    raise KeyError(setting)


def component_spec(spec: RetrievalSpec, name: str) -> RetrievalSpec:
    """The spec of a hybrid's component ``name``: its own parameters, read from the hybrid's."""
    kind = retriever(name)
    values = spec.values
    return RetrievalSpec(kind.name, tuple((p, values.get(p.name, p.default)) for p in kind.params))  # type: ignore[misc]
