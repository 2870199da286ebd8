"""Every sweep axis, declared once: the one place the CLI, the plugin, the planner, the reports
and the docs read what an axis is.

How to add an axis (e.g. ``index=flat,hnsw``):

1. Append one declaration to :data:`SWEEP_AXES`: a kind from :mod:`.axis_kinds`
   (``ChoiceAxis(name="index", choices=INDEXES, ...)``) whose ``name`` is the :class:`Contract`
   field it sets, with a ``label`` (plots, tables), an ``explanation`` and ``examples`` (complete
   ``--vary`` items; each must parse). When a value needs more than ``contract.replace(name=value)``,
   declare a small subclass here overriding ``apply`` and ``sets`` (as :class:`NormalizeAxis`).
   An axis of the reranker (``evalsuite rerank-sweep``) says ``stage="reranker"`` and the
   :class:`RerankerContract` ``field`` it sets (``rerank_dtype`` sets ``dtype``).
2. Add its test beside ``tests/sweep/test_sweep_registry.py`` (parse, apply, forward-pass need).

Nothing else changes: :data:`AXIS_NAMES`, ``--vary``'s help, the grid-conflict check (axes sharing a
field in ``sets``), planning (a value needs its own forward pass exactly when it changes
``Contract.forward_key``), plots (``numeric`` axes are lines) and :func:`.axes.axis_table` read
the declarations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ..base.errors import SpecError
from ..contract import DTYPES, POOLINGS, Contract
from ..retrieval.index.spec import INDEX_KIND_NAMES, parse_index
from ..retrieval.retrievers import RETRIEVER_NAMES, parse_retrieval, retrieval_param, with_setting
from .axis_kinds import AxisDeclaration, AxisValue, BoolAxis, ChoiceAxis, IntAxis, Setting, TextAxis, text_label

PAIR_KEYWORDS = ("base", "none", "swapped", "query_only", "doc_only")


@dataclass(frozen=True, kw_only=True)
class NormalizeAxis(BoolAxis):
    """normalize=false also turns cosine similarity into dot (cosine needs unit vectors)."""

    @property
    def sets(self) -> tuple[str, ...]:
        return ("normalize", "similarity")

    def apply(self, contract: Contract, value: Setting) -> Contract:
        similarity = "dot" if not value and contract.similarity == "cosine" else contract.similarity
        return contract.replace(normalize=value, similarity=similarity)


@dataclass(frozen=True, kw_only=True)
class PrefixPairAxis(AxisDeclaration):
    """The query and document prefixes together: a keyword of :data:`PAIR_KEYWORDS` (relative to
    the base), ``QUERY|DOC``, or a JSON ``[query, doc]`` pair."""

    keeps_spaces: ClassVar[bool] = True

    @property
    def sets(self) -> tuple[str, ...]:
        return ("query_prefix", "doc_prefix")

    def parse(self, item: object, *, literal: bool) -> AxisValue:
        if isinstance(item, list):
            if len(item) != 2 or not all(isinstance(s, str) for s in item):
                raise self.error(f"{item!r} must be a [query prefix, document prefix] pair of strings")
            return AxisValue(f"{text_label(item[0])}|{text_label(item[1])}", (item[0], item[1]))
        if not isinstance(item, str):
            raise self.error(f"{item!r} is not valid; e.g. {self.example_text}")
        if item.strip().lower() in PAIR_KEYWORDS:
            return AxisValue(item.strip().lower(), item.strip().lower())
        if "|" in item:
            q, _, d = item.partition("|")
            return AxisValue(f"{text_label(q)}|{text_label(d)}", (q, d))
        raise self.error(
            f"{item!r} is neither one of {', '.join(PAIR_KEYWORDS)} nor a 'QUERY PREFIX|DOCUMENT PREFIX' pair"
        )

    def apply(self, contract: Contract, value: Setting) -> Contract:
        q, d = contract.query_prefix, contract.doc_prefix
        keywords = {"base": (q, d), "none": ("", ""), "swapped": (d, q), "query_only": (q, ""), "doc_only": ("", d)}
        pair = keywords[value] if isinstance(value, str) else value
        if not isinstance(pair, tuple):
            raise TypeError(f"prefixes: {value!r} is not a parsed prefix pair")
        return contract.replace(query_prefix=pair[0], doc_prefix=pair[1])


_PARAMETER = re.compile(r"^\s*[A-Za-z_]+\s*=")


@dataclass(frozen=True, kw_only=True)
class IndexAxis(AxisDeclaration):
    """An index spec (:mod:`evalsuite.retrieval.index.spec`): the label is the text as written, the value
    its canonical text. ``hnsw:M=16,ef=64`` keeps its parameters together in a comma list."""

    def parse(self, item: object, *, literal: bool) -> AxisValue:
        text = str(item).strip()
        try:
            return AxisValue(text, parse_index(text).text)
        except SpecError as exc:
            raise self.error(str(exc)) from None

    def regroup(self, items: list[str]) -> list[str]:
        out: list[str] = []
        for item in items:
            if out and _PARAMETER.match(item):
                out[-1] += "," + item
            else:
                out.append(item)
        return out


@dataclass(frozen=True, kw_only=True)
class RetrievalAxis(IndexAxis):
    """A retrieval spec (:mod:`evalsuite.retrieval.retrievers.spec`): the label as written, the value its canonical
    text; ``bm25:k1=1.2,b=0.6`` keeps its parameters together in a comma list."""

    def parse(self, item: object, *, literal: bool) -> AxisValue:
        text = str(item).strip()
        try:
            return AxisValue(text, parse_retrieval(text).text)
        except SpecError as exc:
            raise self.error(str(exc)) from None


@dataclass(frozen=True, kw_only=True)
class RetrievalSettingAxis(AxisDeclaration):
    """One setting of the base contract's retriever (``setting``: its spec key, e.g. ``fusion_k``), read by the
    setting's own parser; over a retriever that does not take it, the first declared one that does at its defaults
    (:func:`evalsuite.retrieval.retrievers.with_setting`: ``fusion_k=20`` over dense is RRF of dense and bm25 with
    k 20). The value is kept as rendered and parsed again when applied. Its cells are bars in the
    plots (the base's value lives inside its retrieval text, not in a contract field of its own)."""

    setting: str

    @property
    def sets(self) -> tuple[str, ...]:
        return ("retrieval",)

    def parse(self, item: object, *, literal: bool) -> AxisValue:
        text = str(item).strip()
        try:
            value = retrieval_param(self.setting).parse(text)
        except SpecError as exc:
            raise self.error(str(exc)) from None
        return AxisValue(text, retrieval_param(self.setting).render(value))

    def apply(self, contract: Contract, value: Setting) -> Contract:
        return contract.replace(retrieval=with_setting(contract.retrieval, self.setting, value).text)


@dataclass(frozen=True, kw_only=True)
class FusionWeightAxis(RetrievalSettingAxis):
    """wsum's weights: ``W`` (two fused retrievers: the first weighs W, the second 1 - W) or ``W1+W2+...`` (one
    weight per fused retriever, in --fuse order)."""

    def parse(self, item: object, *, literal: bool) -> AxisValue:
        text = str(item).strip()
        try:
            weights = retrieval_param(self.setting).parse(text)
        except SpecError as exc:
            raise self.error(str(exc)) from None
        if not isinstance(weights, tuple) or (len(weights) == 1 and not 0 <= float(weights[0]) <= 1):
            raise self.error(f"{text!r}: a single weight W (the first retriever's; the second's is 1 - W) is 0 to 1")
        return AxisValue(text, retrieval_param(self.setting).render(weights))

    def apply(self, contract: Contract, value: Setting) -> Contract:
        text = str(value)
        if "+" not in text:  # W: the first of two fused retrievers W, the second 1 - W
            text = f"{float(text):g}+{round(1 - float(text), 6):g}"
        return contract.replace(retrieval=with_setting(contract.retrieval, self.setting, text).text)


SWEEP_AXES: tuple[AxisDeclaration, ...] = (
    ChoiceAxis(
        name="pooling",
        label="pooling",
        choices=POOLINGS,
        examples=("pooling=cls,mean,last",),
        explanation="how token vectors become one vector; every pooling shares one forward pass",
    ),
    TextAxis(
        name="query_prefix",
        label="query prefix",
        examples=("query_prefix=none,base", 'query_prefix=["query: ", ""]'),
        explanation="text put before every query; none = empty, base = the base contract's",
    ),
    TextAxis(
        name="doc_prefix",
        label="document prefix",
        examples=("doc_prefix=none,base", 'doc_prefix=["passage: ", ""]'),
        explanation="text put before every document; none = empty, base = the base contract's",
    ),
    PrefixPairAxis(
        name="prefixes",
        label="query/document prefixes",
        examples=("prefixes=base,none,swapped,query_only,doc_only", "prefixes=query: |passage: "),
        explanation="both prefixes together: base, none, swapped, query_only, doc_only or QUERY|DOC",
    ),
    ChoiceAxis(
        name="dtype",
        label="dtype",
        choices=DTYPES,
        examples=("dtype=float32,bfloat16,float16",),
        explanation="the model's compute precision (a forward pass per dtype)",
    ),
    IntAxis(
        name="max_length",
        label="max length (tokens)",
        minimum=2,
        examples=("max_length=128,256,512",),
        explanation="tokens kept per text before truncation (a forward pass per length)",
    ),
    IntAxis(
        name="dim",
        label="dimension",
        minimum=1,
        examples=("dim=384,256,128",),
        shows_storage=True,
        explanation="output dimension (Matryoshka: truncate, then re-normalize); shares the forward pass",
    ),
    NormalizeAxis(
        name="normalize",
        label="normalize",
        examples=("normalize=true,false",),
        explanation="unit-length vectors; false also turns cosine similarity into dot",
    ),
    IndexAxis(
        name="index",
        label="index",
        crosses=("dim",),
        examples=("index=flat,hnsw,ivfpq,sq8,binary", "index=hnsw:M=16,ef=32,ivf:nlist=64,nprobe=8,binary+rescore=100"),
        explanation=f"the FAISS index searched ({', '.join(INDEX_KIND_NAMES)}); flat is exact, the others are measured "
        "against it; crossed with dim; shares the forward pass",
    ),
    RetrievalAxis(
        name="retrieval",
        label="retrieval",
        examples=("retrieval=dense,bm25,hybrid", "retrieval=hybrid:fusion=rrf,k=20,hybrid:fusion=wsum"),
        explanation=f"the retriever whose ranking is scored ({', '.join(RETRIEVER_NAMES)}); every cell shares the "
        "forward pass, bm25 cells one index",
    ),
    RetrievalSettingAxis(
        name="fusion",
        setting="fusion",
        label="fusion",
        examples=("fusion=rrf,wsum,mnz",),
        explanation="how ranx fuses the base's hybrid (over a base that fuses nothing: dense and bm25); every cell "
        "shares the forward pass",
    ),
    RetrievalSettingAxis(
        name="fusion_k",
        setting="fusion_k",
        label="RRF k",
        examples=("fusion_k=10,60,100",),
        explanation="RRF's k (the base's hybrid, or RRF of dense and bm25)",
    ),
    FusionWeightAxis(
        name="fusion_weight",
        setting="fusion_weights",
        label="fusion weight",
        examples=("fusion_weight=0.5,0.7,0.9", "fusion_weight=0.6+0.4"),
        explanation="wsum's weights: W (the first fused retriever W, the second 1 - W) or W1+W2+...; the fusion "
        "becomes wsum",
    ),
    RetrievalSettingAxis(
        name="sparse_top_k",
        setting="sparse_top_k",
        label="sparse top-k",
        examples=("sparse_top_k=0,256,64",),
        explanation="the largest sparse weights kept per query and document (0: all) of the base's sparse "
        "retriever (or of sparse over a base that has none)",
    ),
    # The reranker's axes (``evalsuite rerank-sweep``): every cell shares the base first stage.
    IntAxis(
        name="depth",
        stage="depth",
        label="rerank depth",
        minimum=1,
        examples=("depth=10,50,100",),
        explanation="documents per query the reranker reorders; every depth shares one first stage and "
        "one scoring of the deepest depth's pairs",
    ),
    IntAxis(
        name="rerank_max_length",
        stage="reranker",
        field="max_length",
        label="reranker max length (tokens)",
        minimum=4,
        examples=("rerank_max_length=128,256,512",),
        explanation="max tokens per (query, document) pair the reranker reads",
    ),
    ChoiceAxis(
        name="rerank_dtype",
        stage="reranker",
        field="dtype",
        label="reranker dtype",
        choices=DTYPES,
        examples=("rerank_dtype=float32,bfloat16",),
        explanation="the reranker's forward-pass precision",
    ),
)

AXIS_NAMES: tuple[str, ...] = tuple(d.name for d in SWEEP_AXES)
FIRST_STAGE_AXES: tuple[str, ...] = tuple(d.name for d in SWEEP_AXES if d.stage == "first_stage")
RERANKER_AXES: tuple[str, ...] = tuple(d.name for d in SWEEP_AXES if d.stage != "first_stage")
_BY_NAME = {d.name: d for d in SWEEP_AXES}


def declaration(name: str) -> AxisDeclaration | None:
    """The declaration of axis ``name`` (``-`` and ``_`` alike), or None when there is none."""
    return _BY_NAME.get(name.strip().replace("-", "_"))
