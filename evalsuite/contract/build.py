"""How a request becomes a frozen contract: every default resolved against what the model declares.

The builder reads a :class:`ContractRequest`, the settings of a request that shape a vector, declared here so
that the contract layer needs nothing from the layers above it; ``run.spec.RunSpec`` satisfies it by its fields
(mypy checks that where a ``RunSpec`` is passed). A setting that overrides a declaration is a departure recorded
in the contract (``departures``).
"""

from __future__ import annotations

import re
from typing import Protocol

from ..base.errors import SpecError
from ..model import ModelInfo
from ..model.prompts import declared_prompt
from ..retrieval.retrievers import RETRIEVAL_SETTINGS, parse_retrieval, retriever
from ..retrieval.retrievers import resolve as resolve_retrieval
from .value import POOLINGS, Contract


class ContractRequest(Protocol):
    """What the builder reads from a request (``RunSpec``): ``None`` means "what the model declares" or the
    documented default. The retrieval settings are the names in ``RETRIEVAL_SETTINGS``."""

    @property
    def model_name(self) -> str | None: ...
    @property
    def pooling(self) -> str | None: ...
    @property
    def query_prefix(self) -> str | None: ...
    @property
    def doc_prefix(self) -> str | None: ...
    @property
    def dtype(self) -> str: ...
    @property
    def max_length(self) -> int | None: ...
    @property
    def truncation(self) -> str: ...
    @property
    def dim(self) -> int | None: ...
    @property
    def normalize(self) -> bool | None: ...
    @property
    def similarity(self) -> str | None: ...
    @property
    def index(self) -> str: ...
    @property
    def retrieval(self) -> str: ...
    @property
    def fuse(self) -> tuple[str, ...] | None: ...
    @property
    def fusion(self) -> str | None: ...
    @property
    def fusion_k(self) -> int | None: ...
    @property
    def fusion_depth(self) -> int | None: ...
    @property
    def fusion_weights(self) -> tuple[float, ...] | None: ...
    @property
    def fusion_norm(self) -> str | None: ...
    @property
    def sparse_top_k(self) -> int | None: ...
    @property
    def multivector_rerank(self) -> int | None: ...
    @property
    def multivector_projection(self) -> str | None: ...
    @property
    def multivector_specials(self) -> str | None: ...
    @property
    def bm25_k1(self) -> float | None: ...
    @property
    def bm25_b(self) -> float | None: ...
    @property
    def bm25_method(self) -> str | None: ...
    @property
    def bm25_stopwords(self) -> str | None: ...
    @property
    def bm25_stemmer(self) -> str | None: ...


def _departures(
    spec: ContractRequest, info: ModelInfo, pooling: str, normalize: bool, prefixes: dict[str, str]
) -> list[str]:
    """Each setting that overrides what the model declares, said in words (printed and kept in the contract)."""
    out: list[str] = []
    if spec.pooling is not None and info.pooling_problem is not None:
        out.append(f"pooling {pooling}: --pooling chosen because the model's pooling declaration cannot be run")
    elif spec.pooling is not None and info.declared_pooling is not None and spec.pooling != info.declared_pooling:
        out.append(f"pooling {pooling}: the model declares {info.declared_pooling} (1_Pooling/config.json)")
    if spec.normalize is not None and info.declared_normalize is not None and spec.normalize != info.declared_normalize:
        declared = "a Normalize module" if info.declared_normalize else "no Normalize module"
        out.append(f"normalize {str(normalize).lower()}: the model declares {declared} (modules.json)")
    for role, given in (("query", spec.query_prefix), ("document", spec.doc_prefix)):
        name, declared_text = declared_prompt(info.prompts, role, info.default_prompt_name)
        if given is not None and name is not None and given != declared_text:
            which = ", its default_prompt_name" if name == info.default_prompt_name else ""
            out.append(
                f"{role} prefix {prefixes[role]!r}: the model declares the {name!r} prompt {declared_text!r} "
                f"(config_sentence_transformers.json{which})"
            )
    return out


_NAME_CHARS = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")


def lineage(spec: ContractRequest, info: ModelInfo) -> str:
    """The contract's ``model``: the declared ``model_name`` (the lineage one model's releases share, whatever
    directory each is built into), else the model directory's or hub id's name."""
    name = spec.model_name
    if name is None:
        return info.name
    if not isinstance(name, str) or not name.strip() or not _NAME_CHARS.match(name) or name != name.strip():
        raise SpecError(
            f"model_name {name!r} is not a name: give the lineage every release of this model shares, 1 to 200 "
            'printable characters without leading or trailing spaces (model_name = "my-embedder")'
        )
    return name


def retrieval_of(spec: ContractRequest) -> str:
    """The canonical retrieval text of the settings: ``retrieval`` with the retrieval settings given over it."""
    given = {name: getattr(spec, name) for name in RETRIEVAL_SETTINGS if getattr(spec, name) is not None}
    return resolve_retrieval(spec.retrieval, given).text


def _reads_vectors(retrieval: str) -> bool:
    parsed = parse_retrieval(retrieval)
    return retriever(parsed.kind).needs_vectors(parsed)


def build_contract(spec: ContractRequest, info: ModelInfo) -> Contract:
    """Resolve every default against what the model declares, and validate the result. A setting that overrides
    a declaration is a departure recorded in the contract (``departures``)."""
    retrieval = retrieval_of(spec)
    if spec.pooling is None and info.pooling_problem is not None and _reads_vectors(retrieval):
        raise SpecError(info.pooling_problem)
    pooling = spec.pooling or info.declared_pooling or "mean"  # a retriever without vectors ignores it
    if pooling not in POOLINGS:
        raise SpecError(
            f"{info.root}: pooling {pooling!r} is not one the reference encoder implements; "
            f"pass --pooling {'|'.join(POOLINGS)}"
        )
    normalize = (
        spec.normalize
        if spec.normalize is not None
        else (info.declared_normalize if info.declared_normalize is not None else True)
    )
    similarity = spec.similarity or ("cosine" if normalize else "dot")
    query_name, declared_query = declared_prompt(info.prompts, "query", info.default_prompt_name)
    doc_name, declared_doc = declared_prompt(info.prompts, "document", info.default_prompt_name)
    query_prefix = spec.query_prefix if spec.query_prefix is not None else declared_query
    doc_prefix = spec.doc_prefix if spec.doc_prefix is not None else declared_doc
    departures = _departures(spec, info, pooling, normalize, {"query": query_prefix, "document": doc_prefix})
    max_length = spec.max_length or info.default_max_length
    if max_length > info.max_positions:
        raise SpecError(f"max_length {max_length} exceeds what the model supports ({info.max_positions} tokens)")
    dim = spec.dim or info.hidden_size
    if dim > info.hidden_size:
        raise SpecError(f"dim {dim} exceeds the model's output dimension {info.hidden_size}")
    if info.matryoshka_dims and dim != info.hidden_size and dim not in info.matryoshka_dims:
        raise SpecError(
            f"dim {dim} is not one of the Matryoshka dimensions the model declares {list(info.matryoshka_dims)}"
        )
    return Contract(
        model=lineage(spec, info),
        model_revision=info.revision,
        tokenizer_revision=info.tokenizer_revision,
        pooling=pooling,
        normalize=normalize,
        query_prefix=query_prefix,
        doc_prefix=doc_prefix,
        dtype=spec.dtype,
        max_length=max_length,
        truncation=spec.truncation,
        dim=dim,
        similarity=similarity,
        matryoshka_dims=info.matryoshka_dims,
        index=spec.index,
        retrieval=retrieval,
        query_prompt=query_name if spec.query_prefix is None else None,
        doc_prompt=doc_name if spec.doc_prefix is None else None,
        departures=tuple(departures),
    )
