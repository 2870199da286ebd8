"""The reranker contract: everything that changes a cross-encoder's score of a (query, document) pair.

A cross-encoder scores a pair in one forward pass; its score depends on the pinned weights, how the
pair is rendered (the tokenizer's pair encoding ``[CLS] q [SEP] d [SEP]`` or one text from a
template), the max length of the pair and how an over-long pair is cut, the dtype, and the
activation applied to the logit (sigmoid or none). Defaults come from what the model declares
(:func:`declared_activation`); a served reranker is compared after the same activation.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.errors import ContractError, ModelError, SpecError
from ..contract import DTYPES
from ..model import ModelInfo

ACTIVATIONS = ("sigmoid", "none")
PAIR_TEMPLATE = "pair"  # the tokenizer's own pair encoding (token type ids 0 for the query, 1 for the document)
PAIR_TRUNCATIONS = ("longest_first", "only_second", "reject")
_SIGMOID_NAMES = ("Sigmoid",)
_IDENTITY_NAMES = ("Identity",)


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise SpecError(f"reranker {name}={value!r} is not valid; choose one of {', '.join(allowed)}")


@dataclass(frozen=True)
class RerankerContract:
    """Frozen description of how a pair becomes a score."""

    model: str
    model_revision: str
    tokenizer_revision: str
    activation: str
    template: str
    max_length: int
    truncation: str = "longest_first"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        _choice("activation", self.activation, ACTIVATIONS)
        _choice("truncation", self.truncation, PAIR_TRUNCATIONS)
        _choice("dtype", self.dtype, DTYPES)
        if not isinstance(self.max_length, int) or self.max_length < 4:
            raise SpecError(f"reranker max_length={self.max_length!r} must be an integer >= 4")
        if self.template != PAIR_TEMPLATE:
            missing = [p for p in ("{query}", "{document}") if p not in self.template]
            if missing:
                raise SpecError(
                    f"reranker template {self.template!r} lacks {', '.join(missing)}; use 'pair' for "
                    "the tokenizer's pair encoding, or a text with both {query} and {document}"
                )
            if self.truncation == "only_second":
                raise SpecError(
                    "reranker truncation 'only_second' needs the 'pair' template (a one-text template "
                    "has no second segment); use longest_first or reject"
                )

    @property
    def is_pair(self) -> bool:
        return self.template == PAIR_TEMPLATE

    def render(self, query: str, document: str) -> tuple[str, str | None]:
        """The model input for a pair: (first, second) for the pair encoding, (text, None) for a template."""
        if self.is_pair:
            return query, document
        return self.template.replace("{query}", query).replace("{document}", document), None

    def activate(self, logits: np.ndarray) -> np.ndarray:
        """Scores from raw logits under this contract's activation (float64)."""
        return activate(logits, self.activation)

    def replace(self, **changes: Any) -> RerankerContract:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "reranker contract") -> RerankerContract:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ContractError(f"{source}: unknown reranker contract field(s) {sorted(unknown)}")
        return cls(**dict(data))

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]

    def forward_key(self) -> tuple[str, ...]:
        """What needs its own forward pass: everything but the activation (applied to stored logits)."""
        return (
            self.model_revision,
            self.tokenizer_revision,
            self.template,
            str(self.max_length),
            self.truncation,
            self.dtype,
        )

    def diff(self, other: RerankerContract) -> dict[str, tuple[object, object]]:
        return {
            f.name: (getattr(self, f.name), getattr(other, f.name))
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(other, f.name)
        }


def activate(logits: np.ndarray, activation: str) -> np.ndarray:
    _choice("activation", activation, ACTIVATIONS)
    x = np.asarray(logits, dtype=np.float64)
    if activation == "none":
        return x
    return 1.0 / (1.0 + np.exp(-x))


def declared_activation(config: Mapping[str, object], where: str = "config.json") -> str:
    """What a cross-encoder's config says about its score activation.

    sentence-transformers >= 4 writes ``sentence_transformers.activation_fn``; older versions write
    ``sbert_ce_default_activation_function``. Without either, a one-label model's scores go through a
    sigmoid (sentence-transformers' ``CrossEncoder`` default, and vLLM's for one-label scoring).
    """
    st = config.get("sentence_transformers")
    name = st.get("activation_fn") if isinstance(st, dict) else None
    name = name or config.get("sbert_ce_default_activation_function")
    if name is None:
        return "sigmoid"
    short = str(name).rsplit(".", 1)[-1]
    if short in _SIGMOID_NAMES:
        return "sigmoid"
    if short in _IDENTITY_NAMES:
        return "none"
    raise ModelError(
        f"{where}: the model declares the score activation {name!r}; the reference knows Sigmoid and "
        "Identity: pass --reranker-activation sigmoid|none to say which one the scores use"
    )


def read_config(info: ModelInfo) -> dict[str, object]:
    path = info.path / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelError(f"{path}: cannot read the reranker config ({exc})") from None
    if not isinstance(data, dict):
        raise ModelError(f"{path}: expected a JSON object")
    return data


def num_labels(config: Mapping[str, Any]) -> int:
    labels = config.get("id2label")
    if isinstance(labels, dict) and labels:
        return len(labels)
    return int(config.get("num_labels") or 2)


def build_reranker_contract(
    info: ModelInfo,
    *,
    activation: str | None = None,
    template: str | None = None,
    max_length: int | None = None,
    truncation: str = "longest_first",
    dtype: str = "float32",
) -> RerankerContract:
    """Resolve every default against what the model declares, and validate the result."""
    config = read_config(info)
    where = str(info.path / "config.json")
    labels = num_labels(config)
    if labels != 1:
        raise ModelError(
            f"{where}: a reranker must have one output label (num_labels=1); this model has {labels}: "
            "it is a classifier, not a relevance scorer"
        )
    max_length = max_length or info.default_max_length
    if max_length > info.max_positions:
        raise SpecError(
            f"reranker max_length {max_length} exceeds what the model supports ({info.max_positions} tokens)"
        )
    return RerankerContract(
        model=info.name,
        model_revision=info.revision,
        tokenizer_revision=info.tokenizer_revision,
        activation=activation or declared_activation(config, where),
        template=template or PAIR_TEMPLATE,
        max_length=max_length,
        truncation=truncation,
        dtype=dtype,
    )


def finite_or_error(scores: np.ndarray, what: str) -> None:
    bad = [i for i, s in enumerate(scores.tolist()) if not math.isfinite(s)]
    if bad:
        raise ModelError(
            f"{what}: {len(bad)} non-finite score(s) (first at pair {bad[0]}); the reference produced "
            "NaN or infinity: try --reranker-dtype float32"
        )
