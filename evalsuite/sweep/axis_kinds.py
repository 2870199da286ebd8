"""The kinds of sweep axis: how one value is read and how it sets a contract.

A kind (:class:`ChoiceAxis`, :class:`IntAxis`, :class:`BoolAxis`, :class:`TextAxis`) is a value
grammar; an axis is one declaration of a kind in :mod:`evalsuite.sweep.registry`. A kind whose
values need more than ``contract.replace(name=value)`` subclasses :class:`AxisDeclaration` and
overrides :meth:`~AxisDeclaration.apply` and :attr:`~AxisDeclaration.sets`.

An axis varies one stage (:data:`Stage`): the first stage's :class:`Contract` (``evalsuite sweep``,
``pytest --vary`` and the first stage under ``evalsuite rerank-sweep``), the reranker's contract or
the rerank depth (``evalsuite rerank-sweep`` only).

Declarations are frozen dataclasses of module-level classes (no lambdas), so parsed axes pickle
across pytest-xdist workers with the sweep results that hold them.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from ..base.errors import SpecError
from ..contract import ROLES, Contract

if TYPE_CHECKING:
    from ..rerank.contract import RerankerContract

# What a parsed value applies: a choice or a text, a number, a flag, a (query, document) pair,
# or None for "keep the base contract's value".
Setting = str | int | bool | tuple[str, str] | None

TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")

# What an axis varies: the first stage's contract, the reranker's contract, or the rerank depth.
Stage = Literal["first_stage", "reranker", "depth"]
FIRST_STAGE: tuple[Stage, ...] = ("first_stage",)
ALL_STAGES: tuple[Stage, ...] = ("first_stage", "reranker", "depth")
STAGE_NAMES: dict[Stage, str] = {
    "first_stage": "the first stage",
    "reranker": "the reranker",
    "depth": "the rerank depth",
}


@dataclass(frozen=True)
class AxisValue:
    """One value of an axis: ``label`` is what names the cell, ``value`` what it applies."""

    label: str
    value: Setting


@dataclass(frozen=True, kw_only=True)
class AxisDeclaration(ABC):
    """One sweep axis. ``name`` is what ``--vary NAME=...`` says and, unless :meth:`apply` is
    overridden, the contract field a value sets. ``label`` names the axis in plots and tables,
    ``explanation`` says what it changes, ``examples`` are complete ``--vary`` items (each parses).
    ``shows_storage``: the sweep reports add a storage table when a cell varies this axis.
    ``crosses``: axes this one is crossed with even one variable at a time (the index axis is
    measured at every dimension a sweep varies: the Matryoshka x quantization table).
    ``stage``: what a value sets (:data:`Stage`); ``field``: the field it sets when that is not
    ``name`` (``rerank_dtype`` sets the reranker contract's ``dtype``)."""

    name: str
    label: str
    explanation: str
    examples: tuple[str, ...]
    shows_storage: bool = False
    crosses: tuple[str, ...] = ()
    stage: Stage = "first_stage"
    field: str = ""

    numeric: ClassVar[bool] = False  # values are numbers: plotted as a line over x, bars otherwise
    keeps_spaces: ClassVar[bool] = False  # comma-split values are not stripped ("query: ")
    allows_empty: ClassVar[bool] = False  # an empty comma-split value is a value (the empty text)

    @abstractmethod
    def parse(self, item: object, *, literal: bool) -> AxisValue:
        """One value as written: a comma-split string, or an item of a JSON list (``literal``:
        keywords such as ``none`` are then plain text). Raises :class:`SpecError`."""

    def regroup(self, items: list[str]) -> list[str]:
        """Comma-split values, regrouped where a value's own syntax has commas (index parameters)."""
        return items

    @property
    def sets(self) -> tuple[str, ...]:
        """The fields of its stage's contract a value may change (two axes of one stage that share
        one cannot be crossed)."""
        return (self.field or self.name,)

    def apply(self, contract: Contract, value: Setting) -> Contract:
        """``contract`` with this axis set to ``value`` (as :meth:`parse` made it)."""
        self.require("first_stage")
        return contract.replace(**{self.sets[0]: value})

    def apply_reranker(self, contract: RerankerContract, value: Setting) -> RerankerContract:
        """The reranker's ``contract`` with this (reranker) axis set to ``value``."""
        self.require("reranker")
        return contract.replace(**{self.sets[0]: value})

    def require(self, stage: Stage) -> None:
        """Raises :class:`SpecError` unless this axis varies ``stage``."""
        if self.stage != stage:
            raise self.error(f"varies {STAGE_NAMES[self.stage]}, not {STAGE_NAMES[stage]}")

    def needs_forward_pass(self, base: Contract, value: Setting) -> bool:
        """Whether ``value`` changes what a forward pass computes for ``base`` (in either role);
        never for an axis of the reranker or the depth (the first stage is shared)."""
        if self.stage != "first_stage":
            return False
        changed = self.apply(base, value)
        return any(changed.forward_key(role) != base.forward_key(role) for role in ROLES)

    @property
    def example_text(self) -> str:
        return " or ".join(self.examples)

    def error(self, message: str) -> SpecError:
        return SpecError(f"--vary {self.name}: {message}")


@dataclass(frozen=True, kw_only=True)
class ChoiceAxis(AxisDeclaration):
    """One of a fixed set of words (case-insensitive)."""

    choices: tuple[str, ...]

    def parse(self, item: object, *, literal: bool) -> AxisValue:
        value = str(item).strip().lower()
        if value not in self.choices:
            raise self.error(f"{item!r} is not valid; choose from {', '.join(self.choices)}")
        return AxisValue(value, value)


@dataclass(frozen=True, kw_only=True)
class IntAxis(AxisDeclaration):
    """An integer of at least ``minimum``."""

    minimum: int
    numeric: ClassVar[bool] = True

    def parse(self, item: object, *, literal: bool) -> AxisValue:
        try:
            value = int(str(item).strip())
        except ValueError:
            raise self.error(f"{item!r} is not an integer; e.g. {self.example_text}") from None
        if value < self.minimum:
            raise self.error(f"{value} is too small; it must be >= {self.minimum}")
        return AxisValue(str(value), value)


@dataclass(frozen=True, kw_only=True)
class BoolAxis(AxisDeclaration):
    """true/yes/on/1 or false/no/off/0 (or a JSON boolean)."""

    def parse(self, item: object, *, literal: bool) -> AxisValue:
        if isinstance(item, bool):
            return AxisValue(str(item).lower(), item)
        text = str(item).strip().lower()
        if text in TRUE_WORDS:
            return AxisValue("true", True)
        if text in FALSE_WORDS:
            return AxisValue("false", False)
        raise self.error(f"{item!r} is not a boolean; use {self.example_text}")


def text_label(text: str) -> str:
    """How a literal text names a cell: JSON-quoted, so spaces and empty texts stay visible."""
    return json.dumps(text, ensure_ascii=False)


@dataclass(frozen=True, kw_only=True)
class TextAxis(AxisDeclaration):
    """A literal text, kept with its spaces; ``none`` (or empty, or JSON null) is the empty text,
    ``base`` keeps the base contract's text. Inside a JSON list a keyword is literal text."""

    keeps_spaces: ClassVar[bool] = True
    allows_empty: ClassVar[bool] = True

    def parse(self, item: object, *, literal: bool) -> AxisValue:
        if item is None:
            return AxisValue("none", "")
        if not isinstance(item, str):
            raise self.error(f"{item!r} is not a string; {self.label} values are text, e.g. {self.example_text}")
        if not literal and item.strip().lower() in ("none", ""):
            return AxisValue("none", "")
        if not literal and item.strip().lower() == "base":
            return AxisValue("base", None)
        return AxisValue(text_label(item), item)

    def apply(self, contract: Contract, value: Setting) -> Contract:
        return contract if value is None else contract.replace(**{self.name: value})
