"""Settings checked by the type they are declared with: a spec file's value of the wrong type (a number where a
list of strings belongs, a table where a string belongs) is a usage error that names the key, the type it wants,
what it got and where, before anything reads it.

A setting's type is the annotation of the dataclass field that holds it (``RunSpec``, ``RerankSpec``) or a
declared mapping of key to type (the session keys of a spec file); :func:`check_fields` and :func:`check_keys`
read them. Understood: ``str``, ``int``, ``float`` (an integer is a number), ``bool``, ``dict`` (a table),
``list[str]`` and ``tuple[str, ...]`` (a list of strings, or one string: the forms accept ``"a,b"`` or one
item), ``tuple[float, ...]`` (a list of numbers, or one string of them), unions of these and ``None``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

from .errors import SpecError

_WORDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "a table"}


def describe(hint: Any) -> str:
    """The type a setting wants, in words ("a string or a list of strings")."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        words = [describe(a) for a in typing.get_args(hint) if a is not type(None)]
        return " or ".join(dict.fromkeys(words))
    if typing.get_origin(hint) in (list, tuple):
        return "a list of numbers" if _numbers(hint) else "a list of strings"
    return _WORDS.get(hint, getattr(hint, "__name__", str(hint)))


def fits(value: object, hint: Any) -> bool:
    """Whether ``value`` (as TOML or argparse gives it) is of the declared type ``hint``."""
    if value is None:
        return hint is type(None) or (
            typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)
        )
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, a) for a in typing.get_args(hint) if a is not type(None))
    if origin in (list, tuple):
        kind: Any = (int, float) if _numbers(hint) else str
        items_fit = isinstance(value, (list, tuple)) and all(
            isinstance(v, kind) and not isinstance(v, bool) for v in value
        )
        return isinstance(value, str) or items_fit
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is dict:
        return isinstance(value, dict)
    if hint is str:
        return isinstance(value, str)
    return True  # a type this module does not check: its owner validates it


def _numbers(hint: Any) -> bool:
    """``tuple[float, ...]``: a list of numbers (or one string of them, ``"0.7,0.3"``)."""
    return float in typing.get_args(hint)


def _shown(value: object) -> str:
    kind = {dict: "a table", list: "a list", bool: "a boolean", str: "a string"}.get(type(value))
    kind = kind or ("a number" if isinstance(value, (int, float)) else type(value).__name__)
    text = repr(value)
    return f"{kind} ({text if len(text) <= 60 else text[:57] + '...'})"


def check_keys(data: Mapping[str, object], types_by_key: Mapping[str, Any], *, source: str) -> None:
    """Raise :class:`SpecError` for the first key of ``data`` whose value is not of its declared type (keys not
    declared are left to the caller's unknown-key check)."""
    for key, value in data.items():
        hint = types_by_key.get(key.replace("-", "_"))
        if hint is not None and not fits(value, hint):
            raise SpecError(f"{source}: {key} must be {describe(hint)}, got {_shown(value)}; fix the value of {key!r}")


def field_types(cls: type) -> dict[str, Any]:
    """A dataclass's fields and their declared types (annotations resolved)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def check_fields(cls: type, data: Mapping[str, object], *, source: str) -> None:
    """:func:`check_keys` against the fields of the dataclass ``cls``."""
    check_keys(data, field_types(cls), source=source)
