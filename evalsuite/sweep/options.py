"""Sweep options, shared by `evalsuite sweep` and the pytest plugin (declared once, parsed at parse time)."""

from __future__ import annotations

import argparse

from ..errors import SpecError
from ..options import Option
from .axes import AXES, parse_axis


def _vary_item(text: str) -> str:
    try:
        parse_axis(text)
    except SpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


SWEEP_OPTIONS: tuple[Option, ...] = (
    Option("--vary", f"AXIS=V1,V2,... one sweep axis (repeatable); axes: {', '.join(AXES)}; e.g. "
           "pooling=cls,mean,last, dim=384,256,128, prefixes=base,none,swapped, query_prefix=[\"q: \", \"\"]",
           {"action": "append", "type": _vary_item}),
    Option("--grid", "cross every axis (full product) instead of one variable at a time",
           {"action": "store_const", "const": True}),
    Option("--out", "report directory (default: reports/<dataset>/<model>/sweep)"),
)


# The pytest plugin's spelling of the same axes: `pytest --model-rev R --sweep pooling=cls,mean,last`.
SWEEP_PYTEST_OPTIONS: tuple[Option, ...] = (
    Option("--sweep", "AXIS=V1,V2,... sweep axis (repeatable); each cell becomes an item gated against the base",
           {"action": "append", "type": _vary_item}),
    Option("--grid", "cross every sweep axis (full product) instead of one variable at a time",
           {"action": "store_const", "const": True}),
)
