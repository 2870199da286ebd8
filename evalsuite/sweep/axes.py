"""Sweep axes: what a `--vary AXIS=V1,V2` means, parsed and validated before anything loads.

What each axis is (its values, its keywords, how it sets a contract) is declared once in
:mod:`evalsuite.sweep.registry`; this module reads the ``--vary`` syntax shared by all of them:

* comma-separated values: ``pooling=cls,mean,last``, ``dim=384,256,128``, ``normalize=true,false``;
  text axes keep spaces (``prefixes=query: |passage: ``);
* a JSON list when values contain commas: ``query_prefix=["query: ", "search, fast: "]``; inside
  a JSON list a keyword is literal text (``["none"]`` is the text "none", ``null`` is none);
* a spec file's ``sweep`` is one such item, a list of them, or a table of lists.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.errors import SpecError
from .axis_kinds import FIRST_STAGE, STAGE_NAMES, AxisDeclaration, AxisValue, Setting, Stage
from .registry import AXIS_NAMES, FIRST_STAGE_AXES, PAIR_KEYWORDS, SWEEP_AXES, declaration

if TYPE_CHECKING:
    from ..contract import Contract

__all__ = [
    "AXIS_NAMES",
    "PAIR_KEYWORDS",
    "Axis",
    "AxisValue",
    "apply",
    "axes_from_spec",
    "axis_table",
    "conflicts",
    "parse_axis",
    "parse_vary",
    "sweep_from_mapping",
]


@dataclass(frozen=True)
class Axis:
    """One parsed axis: its declaration and the values a sweep gives it, in order."""

    declaration: AxisDeclaration
    values: tuple[AxisValue, ...]

    @property
    def name(self) -> str:
        return self.declaration.name

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(v.label for v in self.values)

    @property
    def numeric(self) -> bool:
        return self.declaration.numeric


def _split(decl: AxisDeclaration, raw: str) -> list[object]:
    text = raw.strip()
    name = decl.name
    if text.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(
                f"--vary {name}=...: the value looks like a JSON list but does not parse "
                f'({exc.msg} at character {exc.pos}); write e.g. {name}=["a", "b"]'
            ) from None
        if not isinstance(items, list) or not items:
            raise SpecError(f"--vary {name}=...: the JSON value must be a non-empty list")
        return items
    text = raw if decl.keeps_spaces else text  # prefixes keep their spaces ("query: ")
    items = decl.regroup([s if decl.keeps_spaces else s.strip() for s in text.split(",")])
    if any(s == "" for s in items) and not decl.allows_empty:
        raise SpecError(
            f"--vary {name}={text!r}: empty value; list values separated by commas, e.g. {decl.example_text}"
        )
    return list(items)


def parse_axis(item: str) -> Axis:
    """One ``AXIS=V1,V2`` item."""
    name, sep, text = item.partition("=")
    if not sep:
        raise SpecError(f"--vary {item!r}: expected AXIS=V1,V2,... (e.g. --vary pooling=cls,mean)")
    decl = declaration(name)
    if decl is None:
        raise SpecError(
            f"--vary {item!r}: unknown axis {name.strip().replace('-', '_')!r}; choose one of {', '.join(AXIS_NAMES)}"
        )
    literal = text.strip().startswith("[")
    values = tuple(decl.parse(v, literal=literal) for v in _split(decl, text))
    return Axis(decl, tuple(dict((v.label, v) for v in values).values()))


def parse_vary(items: Iterable[str], stages: Sequence[Stage] = FIRST_STAGE) -> list[Axis]:
    """Parse ``--vary`` items; repeated axes are merged in order (duplicate values dropped). Only
    axes of ``stages`` are allowed (``evalsuite sweep``: the first stage's; ``rerank-sweep``: all)."""
    merged: dict[str, Axis] = {}
    for item in items:
        axis = parse_axis(item)
        if axis.declaration.stage not in stages:
            raise SpecError(
                f"--vary {item!r}: {axis.name} varies {STAGE_NAMES[axis.declaration.stage]}; vary it with "
                f"`evalsuite rerank-sweep` (axes here: {', '.join(FIRST_STAGE_AXES)})"
            )
        seen = merged.setdefault(axis.name, Axis(axis.declaration, ()))
        labels = set(seen.labels)
        merged[axis.name] = Axis(axis.declaration, seen.values + tuple(v for v in axis.values if v.label not in labels))
    if not merged:
        raise SpecError("a sweep needs at least one --vary AXIS=V1,V2 (e.g. --vary pooling=cls,mean,last)")
    return list(merged.values())


def axes_from_spec(vary: object, *, source: str) -> list[Axis]:
    """Sweep axes written in a spec file: one ``"AXIS=V1,V2"`` string, a list of them, or a table
    ``{pooling = ["cls", "mean"], dim = [256, 128]}``. Errors name ``source``."""
    items: list[str]
    if isinstance(vary, str):
        items = [vary]
    elif isinstance(vary, list) and all(isinstance(v, str) for v in vary):
        items = list(vary)
    elif isinstance(vary, Mapping):
        items = [f"{k}={json.dumps(v if isinstance(v, list) else [v])}" for k, v in vary.items()]
    else:
        raise SpecError(
            f"{source}: sweep vary must be a list of 'AXIS=V1,V2' strings or a table of lists, not {vary!r}"
        )
    try:
        return parse_vary(items)
    except SpecError as exc:
        raise SpecError(f"{source}: {exc}") from None


def sweep_from_mapping(data: Mapping[str, object], *, source: str) -> tuple[list[Axis], bool]:
    """A ``[sweep]`` table of a spec file: ``vary = ["pooling=cls,mean", ...]`` or
    ``vary = {pooling = ["cls", "mean"], dim = [256, 128]}``, and ``grid = true|false``."""
    unknown = set(data) - {"vary", "grid"}
    if unknown:
        raise SpecError(f"{source}: unknown sweep setting(s) {sorted(unknown)}; known: grid, vary")
    grid = data.get("grid", False)
    if not isinstance(grid, bool):
        raise SpecError(f"{source}: sweep grid must be true or false, not {grid!r}")
    return axes_from_spec(data.get("vary"), source=source), grid


def apply(contract: Contract, axis: str, value: Setting) -> Contract:
    """The contract with axis ``axis`` set to ``value`` (as parsed, relative to ``contract``)."""
    decl = declaration(axis)
    if decl is None:
        raise SpecError(f"unknown sweep axis {axis!r}; choose one of {', '.join(AXIS_NAMES)}")
    return decl.apply(contract, value)


def conflicts(axes: Sequence[Axis]) -> list[tuple[str, str, str]]:
    """(axis, axis, contract field) for each pair of axes setting the same field (they cannot be
    crossed in a grid)."""
    out = []
    for i, a in enumerate(axes):
        for b in axes[i + 1 :]:
            same_stage = a.declaration.stage == b.declaration.stage
            shared = [f for f in a.declaration.sets if same_stage and f in b.declaration.sets]
            if shared:
                out.append((a.name, b.name, shared[0]))
    return out


def axis_table(base: Contract) -> tuple[list[str], list[list[str]]]:
    """Headers and rows describing every declared axis (help texts, docs); the last column says
    whether some example value needs a forward pass of its own around ``base``."""
    rows = []
    for d in SWEEP_AXES:
        values = [v for example in d.examples for v in parse_axis(example).values]
        forward = any(d.needs_forward_pass(base, v.value) for v in values)
        stage = d.stage.replace("_", " ")
        rows.append([d.name, d.label, stage, d.example_text, d.explanation, "yes" if forward else "no"])
    return ["axis", "label", "stage", "example", "what it changes", "own forward pass"], rows
