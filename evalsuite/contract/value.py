"""The embedding contract: everything that changes a vector, frozen in one value.

A contract is written into every result, manifest and baseline. Two results are
comparable only when their contracts agree on the fields that matter for the question.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import ContractError, SpecError
from ..retrieval.index.spec import canonical
from ..retrieval.retrievers.spec import DENSE
from ..retrieval.retrievers.spec import canonical as canonical_retrieval

POOLINGS = ("cls", "mean", "last", "max", "weightedmean", "mean_sqrt_len")
DTYPES = ("float32", "bfloat16", "float16")
TRUNCATIONS = ("truncate", "reject")
SIMILARITIES = ("cosine", "dot", "l2")
ROLES = ("query", "document")


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise SpecError(f"{name}={value!r} is not valid; choose one of {', '.join(allowed)}")


@dataclass(frozen=True)
class Contract:
    """Frozen description of how vectors are produced and compared."""

    model: str
    model_revision: str
    tokenizer_revision: str
    pooling: str
    normalize: bool
    query_prefix: str
    doc_prefix: str
    dtype: str
    max_length: int
    truncation: str
    dim: int
    similarity: str = "cosine"
    index: str = "flat"  # the index searched (canonical text, see evalsuite.retrieval.index.spec); flat = exact
    # the retriever whose ranking is scored (canonical text, see evalsuite.retrieval.retrievers.spec); dense = the
    # vectors searched, left out of to_dict and the fingerprint so that every contract from before it compares equal
    retrieval: str = DENSE
    matryoshka_dims: tuple[int, ...] | None = field(default=None, compare=False)
    # what the model declared and was applied (records; vectors follow from the fields above)
    query_prompt: str | None = field(default=None, compare=False)  # the declared prompt name applied to queries
    doc_prompt: str | None = field(default=None, compare=False)  # ... to documents (document, passage, corpus)
    departures: tuple[str, ...] = field(default=(), compare=False)  # settings overriding the model's declaration

    def __post_init__(self) -> None:
        _choice("pooling", self.pooling, POOLINGS)
        _choice("dtype", self.dtype, DTYPES)
        _choice("truncation", self.truncation, TRUNCATIONS)
        _choice("similarity", self.similarity, SIMILARITIES)
        if not isinstance(self.max_length, int) or self.max_length < 2:
            raise SpecError(f"max_length={self.max_length!r} must be an integer >= 2")
        if not isinstance(self.dim, int) or self.dim < 1:
            raise SpecError(f"dim={self.dim!r} must be a positive integer")
        if self.similarity == "cosine" and not self.normalize:
            raise SpecError("similarity 'cosine' needs normalize=true; use similarity 'dot' for raw vectors")
        object.__setattr__(self, "index", canonical(self.index))  # "hnsw" and its defaults spelled out compare equal
        object.__setattr__(self, "retrieval", canonical_retrieval(self.retrieval))

    def prefix(self, role: str) -> str:
        _choice("role", role, ROLES)
        return self.query_prefix if role == "query" else self.doc_prefix

    def render(self, role: str, text: str) -> str:
        """The model input for ``text`` in ``role``: the one place a text becomes what is encoded."""
        return self.prefix(role) + text

    def render_all(self, role: str, texts: Sequence[str]) -> list[str]:
        prefix = self.prefix(role)
        return [prefix + t for t in texts]

    def forward_key(self, role: str) -> tuple[str, ...]:
        """What needs its own forward pass: pooling, dim, normalize and index do not."""
        return (
            self.model_revision,
            self.tokenizer_revision,
            self.dtype,
            str(self.max_length),
            self.truncation,
            role,
            self.prefix(role),
        )

    def replace(self, **changes: Any) -> Contract:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, object]:
        d = dataclasses.asdict(self)
        d["matryoshka_dims"] = list(self.matryoshka_dims) if self.matryoshka_dims else None
        d["departures"] = list(self.departures)
        for name in ("query_prompt", "doc_prompt", "departures"):  # unset records stay out (older contracts)
            if not d[name]:
                del d[name]
        if d["retrieval"] == DENSE:  # dense stays out: contracts, baselines and manifests from before compare equal
            del d["retrieval"]
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "contract") -> Contract:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ContractError(f"{source}: unknown contract field(s) {sorted(unknown)}")
        missing = {f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING} - set(data)
        if missing:
            raise ContractError(f"{source}: contract lacks field(s) {sorted(missing)}")
        kwargs = dict(data)
        if kwargs.get("matryoshka_dims") is not None:
            kwargs["matryoshka_dims"] = tuple(kwargs["matryoshka_dims"])
        kwargs["departures"] = tuple(kwargs.get("departures") or ())
        return cls(**kwargs)

    def fingerprint(self) -> str:
        d = self.to_dict()
        d.pop("matryoshka_dims")
        for name in ("query_prompt", "doc_prompt", "departures"):  # records, not what makes a vector
            d.pop(name, None)
        if d["index"] == "flat":  # contracts from before the index field keep their fingerprint
            d.pop("index")
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    def diff(self, other: Contract, *, ignore: tuple[str, ...] = ()) -> dict[str, tuple[object, object]]:
        """Fields whose values differ, as {field: (self, other)}."""
        out: dict[str, tuple[object, object]] = {}
        for f in dataclasses.fields(self):
            if not f.compare or f.name in ignore:
                continue
            a, b = getattr(self, f.name), getattr(other, f.name)
            if a != b:
                out[f.name] = (a, b)
        return out

    def describe_diff(
        self, other: Contract, labels: tuple[str, str] = ("expected", "found"), ignore: tuple[str, ...] = ()
    ) -> str:
        diffs = self.diff(other, ignore=ignore)
        return "; ".join(f"{k}: {labels[0]} {a!r}, {labels[1]} {b!r}" for k, (a, b) in diffs.items())
