"""Sweep axes: what a `--vary AXIS=V1,V2` means, parsed and validated before anything loads.

Value syntax, per ``--vary`` item:

* comma-separated values: ``pooling=cls,mean,last``, ``dim=384,256,128``, ``normalize=true,false``;
* a JSON list when values contain commas: ``query_prefix=["query: ", "search, fast: "]``;
* prefix axes (``query_prefix``, ``doc_prefix``) take literal strings plus the keywords
  ``none`` (empty prefix) and ``base`` (the base contract's prefix); a literal keyword is
  written as a JSON string inside a JSON list (``["none"]``);
* ``prefixes`` varies the query/document pair together: ``base``, ``none`` (both empty),
  ``swapped`` (query gets the document prefix and vice versa), ``query_only`` (document prefix
  removed), ``doc_only`` (query prefix removed), or an explicit pair ``QUERY|DOC``
  (``prefixes=query: |passage: ``), or in a JSON list ``["swapped", ["query: ", ""]]``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..contract import DTYPES, POOLINGS, Contract
from ..errors import SpecError

AXES = ("pooling", "query_prefix", "doc_prefix", "prefixes", "dtype", "max_length", "dim", "normalize")
PAIR_KEYWORDS = ("base", "none", "swapped", "query_only", "doc_only")
_PREFIX_AXES = ("query_prefix", "doc_prefix", "prefixes")
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


@dataclass(frozen=True)
class AxisValue:
    """One value of an axis: ``label`` is what names the cell, ``value`` what it applies."""

    label: str
    value: Any


@dataclass(frozen=True)
class Axis:
    name: str
    values: tuple[AxisValue, ...]

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(v.label for v in self.values)

    @property
    def numeric(self) -> bool:
        return self.name in ("dim", "max_length")


def _split(name: str, raw: str) -> list[Any]:
    text = raw.strip()
    if text.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(f"--vary {name}=...: the value looks like a JSON list but does not parse "
                            f"({exc.msg} at character {exc.pos}); write e.g. {name}=[\"a\", \"b\"]") from None
        if not isinstance(items, list) or not items:
            raise SpecError(f"--vary {name}=...: the JSON value must be a non-empty list")
        return items
    text = raw if name in _PREFIX_AXES else text  # prefixes keep their spaces ("query: ")
    items = [s if name in _PREFIX_AXES else s.strip() for s in text.split(",")]
    if any(s == "" for s in items) and name not in ("query_prefix", "doc_prefix"):
        raise SpecError(f"--vary {name}={text!r}: empty value; list values separated by commas, "
                        f"e.g. {_EXAMPLES[name]}")
    return items


def _int_value(name: str, minimum: int) -> Callable[[Any], AxisValue]:
    def parse(item: Any) -> AxisValue:
        try:
            value = int(str(item).strip())
        except ValueError:
            raise SpecError(f"--vary {name}: {item!r} is not an integer; e.g. {_EXAMPLES[name]}") from None
        if value < minimum:
            raise SpecError(f"--vary {name}: {value} is too small; it must be >= {minimum}")
        return AxisValue(str(value), value)

    return parse


def _choice_value(name: str, allowed: tuple[str, ...]) -> Callable[[Any], AxisValue]:
    def parse(item: Any) -> AxisValue:
        value = str(item).strip().lower()
        if value not in allowed:
            raise SpecError(f"--vary {name}: {item!r} is not valid; choose from {', '.join(allowed)}")
        return AxisValue(value, value)

    return parse


def _bool_value(item: Any) -> AxisValue:
    if isinstance(item, bool):
        return AxisValue(str(item).lower(), item)
    text = str(item).strip().lower()
    if text in _TRUE:
        return AxisValue("true", True)
    if text in _FALSE:
        return AxisValue("false", False)
    raise SpecError(f"--vary normalize: {item!r} is not a boolean; use normalize=true,false")


def _prefix_label(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _prefix_value(name: str, from_json: bool) -> Callable[[Any], AxisValue]:
    def parse(item: Any) -> AxisValue:
        if item is None:
            return AxisValue("none", "")
        if not isinstance(item, str):
            raise SpecError(f"--vary {name}: {item!r} is not a string; prefixes are text, e.g. {_EXAMPLES[name]}")
        if not from_json and item.strip().lower() in ("none", ""):
            return AxisValue("none", "")
        if not from_json and item.strip().lower() == "base":
            return AxisValue("base", None)
        return AxisValue(_prefix_label(item), item)

    return parse


def _pair_value() -> Callable[[Any], AxisValue]:
    def parse(item: Any) -> AxisValue:
        if isinstance(item, list):
            if len(item) != 2 or not all(isinstance(s, str) for s in item):
                raise SpecError(f"--vary prefixes: {item!r} must be a [query prefix, document prefix] pair of strings")
            return AxisValue(f"{_prefix_label(item[0])}|{_prefix_label(item[1])}", (item[0], item[1]))
        if not isinstance(item, str):
            raise SpecError(f"--vary prefixes: {item!r} is not valid; e.g. {_EXAMPLES['prefixes']}")
        if item.strip().lower() in PAIR_KEYWORDS:
            return AxisValue(item.strip().lower(), item.strip().lower())
        if "|" in item:
            q, _, d = item.partition("|")
            return AxisValue(f"{_prefix_label(q)}|{_prefix_label(d)}", (q, d))
        raise SpecError(f"--vary prefixes: {item!r} is neither one of {', '.join(PAIR_KEYWORDS)} nor a "
                        "'QUERY PREFIX|DOCUMENT PREFIX' pair")

    return parse


_EXAMPLES = {
    "pooling": "pooling=cls,mean,last",
    "query_prefix": 'query_prefix=none,base or query_prefix=["query: ", ""]',
    "doc_prefix": 'doc_prefix=none,base or doc_prefix=["passage: ", ""]',
    "prefixes": "prefixes=base,none,swapped,query_only,doc_only or prefixes=query: |passage: ",
    "dtype": "dtype=float32,bfloat16,float16",
    "max_length": "max_length=128,256,512",
    "dim": "dim=384,256,128",
    "normalize": "normalize=true,false",
}


def _parser(name: str, from_json: bool) -> Callable[[Any], AxisValue]:
    if name == "pooling":
        return _choice_value(name, POOLINGS)
    if name == "dtype":
        return _choice_value(name, DTYPES)
    if name == "max_length":
        return _int_value(name, 2)
    if name == "dim":
        return _int_value(name, 1)
    if name == "normalize":
        return _bool_value
    if name in ("query_prefix", "doc_prefix"):
        return _prefix_value(name, from_json)
    return _pair_value()


def parse_axis(item: str) -> Axis:
    """One ``AXIS=V1,V2`` item."""
    name, sep, text = item.partition("=")
    name = name.strip().replace("-", "_")
    if not sep:
        raise SpecError(f"--vary {item!r}: expected AXIS=V1,V2,... (e.g. --vary pooling=cls,mean)")
    if name not in AXES:
        raise SpecError(f"--vary {item!r}: unknown axis {name!r}; choose one of {', '.join(AXES)}")
    from_json = text.strip().startswith("[")
    parse = _parser(name, from_json)
    values = tuple(parse(v) for v in _split(name, text))
    return Axis(name, tuple(dict((v.label, v) for v in values).values()))


def parse_vary(items: Iterable[str]) -> list[Axis]:
    """Parse ``--vary`` items; repeated axes are merged in order (duplicate values dropped)."""
    merged: dict[str, list[AxisValue]] = {}
    for item in items:
        axis = parse_axis(item)
        seen = merged.setdefault(axis.name, [])
        seen.extend(v for v in axis.values if v.label not in {s.label for s in seen})
    if not merged:
        raise SpecError("a sweep needs at least one --vary AXIS=V1,V2 (e.g. --vary pooling=cls,mean,last)")
    return [Axis(name, tuple(values)) for name, values in merged.items()]


def axes_from_spec(vary: Any, *, source: str) -> list[Axis]:
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
        raise SpecError(f"{source}: sweep vary must be a list of 'AXIS=V1,V2' strings or a table of lists, "
                        f"not {vary!r}")
    try:
        return parse_vary(items)
    except SpecError as exc:
        raise SpecError(f"{source}: {exc}") from None


def sweep_from_mapping(data: Mapping[str, Any], *, source: str) -> tuple[list[Axis], bool]:
    """A ``[sweep]`` table of a spec file: ``vary = ["pooling=cls,mean", ...]`` or
    ``vary = {pooling = ["cls", "mean"], dim = [256, 128]}``, and ``grid = true|false``."""
    unknown = set(data) - {"vary", "grid"}
    if unknown:
        raise SpecError(f"{source}: unknown sweep setting(s) {sorted(unknown)}; known: grid, vary")
    grid = data.get("grid", False)
    if not isinstance(grid, bool):
        raise SpecError(f"{source}: sweep grid must be true or false, not {grid!r}")
    return axes_from_spec(data.get("vary"), source=source), grid


def apply(contract: Contract, axis: str, value: Any) -> Contract:
    """The contract with one axis set to ``value`` (``value`` as parsed, relative to ``contract``)."""
    if axis in ("query_prefix", "doc_prefix"):
        return contract if value is None else contract.replace(**{axis: value})
    if axis == "prefixes":
        q, d = contract.query_prefix, contract.doc_prefix
        pair = {"base": (q, d), "none": ("", ""), "swapped": (d, q), "query_only": (q, ""),
                "doc_only": ("", d)}.get(value, value) if isinstance(value, str) else value
        return contract.replace(query_prefix=pair[0], doc_prefix=pair[1])
    if axis == "normalize":
        similarity = contract.similarity
        if not value and similarity == "cosine":
            similarity = "dot"
        return contract.replace(normalize=value, similarity=similarity)
    return contract.replace(**{axis: value})


def conflicts(axes: Sequence[Axis]) -> list[tuple[str, str]]:
    """Axis pairs that set the same contract field (cannot be crossed in a grid)."""
    names = [a.name for a in axes]
    out = []
    for single in ("query_prefix", "doc_prefix"):
        if single in names and "prefixes" in names:
            out.append((single, "prefixes"))
    return out
