"""Python keywords as a command's options: the front door takes each option under its destination name (``dim``,
``use_cache``, ``canary_min_cosine``) and checks the value the way the command line would, so a function call and
the command line build the same settings through the same code.

A string goes through the option's own parser (``metrics="ndcg@10,recall@100"`` as ``--metrics``); a number
through it too, written as text (``max_length=1`` is refused as ``--max-length 1`` is); a repeatable option takes
one value or a list (``endpoint=["http://a/v1", "http://b/v1"]``); a switch (``--no-cache``) takes its value
(``use_cache=False``). An unknown keyword is a :class:`~evalsuite.base.errors.SpecError` listing the known ones.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..base.errors import SpecError

if TYPE_CHECKING:
    from ..run.options import Option


def namespace(options: Iterable[Option], given: Mapping[str, object], *, source: str) -> argparse.Namespace:
    """An argparse namespace as the command's parser would make it: every option's destination (None when not
    given) and the ``given`` values checked by the options' parsers; SpecError naming ``source`` otherwise."""
    by_dest = {o.dest: o for o in options}
    unknown = sorted(set(given) - set(by_dest))
    if unknown:
        raise SpecError(f"{source}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(by_dest))}")
    values: dict[str, Any] = dict.fromkeys(by_dest)
    for dest, value in given.items():
        if value is not None:
            values[dest] = _parsed(by_dest[dest], value, source)
    return argparse.Namespace(**values)


def _parsed(option: Option, value: object, source: str) -> object:
    kwargs = option.kwargs
    if kwargs.get("action") == "store_const":
        if not isinstance(value, bool):
            raise SpecError(f"{source}: {option.dest} must be True or False (the option {option.flag}), got {value!r}")
        return value
    if kwargs.get("action") == "append":
        items = [value] if isinstance(value, str) or not isinstance(value, (list, tuple)) else list(value)
        return [_one(option, v, source) for v in items]
    return _one(option, value, source)


def _one(option: Option, value: object, source: str) -> object:
    kwargs = option.kwargs
    parse = kwargs.get("type")
    if parse is not None and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        try:
            value = parse(str(value))
        except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
            raise SpecError(f"{source}: {option.dest}={value!r} (the option {option.flag}): {exc}") from None
    choices = kwargs.get("choices")
    if choices is not None and value not in choices:
        raise SpecError(
            f"{source}: {option.dest}={value!r} (the option {option.flag}) is not one of {', '.join(map(str, choices))}"
        )
    return value
