"""Sweeps: single-variable (or grid) experiments around a base contract.

Each axis is declared once in :mod:`.registry` (see there how to add one). Parsing and planning
are pure and light; :func:`run_sweep` (encoding, search, scoring) is
imported on first use so that the pytest plugin can import this package cheaply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .axes import AXIS_NAMES, Axis, AxisValue, axes_from_spec, axis_table, parse_axis, parse_vary, sweep_from_mapping
from .axis_kinds import AxisDeclaration
from .options import SWEEP_OPTIONS
from .plan import BASE_NAME, Cell, ForwardPass, base_cell, plan_cells, plan_passes
from .registry import SWEEP_AXES, declaration

if TYPE_CHECKING:
    from .execute import run_sweep
    from .results import CellResult, PassRecord, SweepResult, SweepStats

_LAZY = ("CellResult", "PassRecord", "SweepResult", "SweepStats", "run_sweep")


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from . import execute

        return getattr(execute, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AXIS_NAMES",
    "BASE_NAME",
    "SWEEP_AXES",
    "SWEEP_OPTIONS",
    "Axis",
    "AxisDeclaration",
    "AxisValue",
    "Cell",
    "CellResult",
    "ForwardPass",
    "PassRecord",
    "SweepResult",
    "SweepStats",
    "axes_from_spec",
    "axis_table",
    "base_cell",
    "declaration",
    "parse_axis",
    "parse_vary",
    "plan_cells",
    "plan_passes",
    "run_sweep",
    "sweep_from_mapping",
]
