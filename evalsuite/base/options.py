"""An option declared once (flag, help, argparse keywords, the default its help shows) and the two functions that
register options with ``argparse`` or pytest and collect the values a user gave. Every job's options are these
(`run/options.py` declares the run's; each package its own)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

_NO_DEFAULT = object()


def render_default(value: object) -> str:
    if isinstance(value, (tuple, list)):
        return ",".join(render_default(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@dataclass(frozen=True)
class Option:
    flag: str
    help: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    default: object = _NO_DEFAULT  # shown in the help as "(default: X)"; the parsed default stays None

    @property
    def name(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def dest(self) -> str:
        return str(self.kwargs.get("dest_name", self.name))

    def help_text(self) -> str:
        if self.default is _NO_DEFAULT or self.default is None:
            return self.help
        return f"{self.help} (default: {render_default(self.default)})"

    def with_default(self, default: object) -> Option:
        return dataclasses.replace(self, default=default)


def add_options(add: Callable[..., object], options: Iterable[Option], dest_prefix: str = "") -> None:
    """Register options with ``argparse``'s ``add_argument`` or pytest's ``addoption``."""
    for opt in options:
        kw = dict(opt.kwargs)
        kw.pop("dest_name", None)
        if kw.get("action") != "store_const":
            kw.setdefault("metavar", "{" + ",".join(kw["choices"]) + "}" if "choices" in kw else opt.name.upper())
        add(opt.flag, dest=dest_prefix + opt.dest, default=None, help=opt.help_text().replace("%", "%%"), **kw)


def collect(values: Any, options: Iterable[Option], dest_prefix: str = "") -> dict[str, Any]:
    """The settings a user actually gave, as {spec field: value}."""
    out = {}
    for opt in options:
        value = getattr(values, dest_prefix + opt.dest, None)
        if value is not None:
            out[opt.dest] = value
    return out
