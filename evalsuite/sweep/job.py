"""The sweep as one job: the base prepared, the cells planned, every pass encoded and every cell scored against
the base; `evalsuite sweep` prints and writes the :class:`SweepRun` this returns, and ``evalsuite.sweep()``
returns it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..run.prepared import Prepared
    from ..run.spec import RunSpec
    from .axes import Axis
    from .plan import Cell
    from .results import SweepResult


def _quiet(line: str) -> None:
    return None


@dataclass(frozen=True)
class SweepRun:
    """What a sweep produced, the inputs it was prepared from, its cells, and its report directory (None: none)."""

    result: SweepResult
    prepared: Prepared
    cells: tuple[Cell, ...]
    out: Path | None


def run_sweep_job(
    spec: RunSpec,
    axes: Sequence[Axis],
    grid: bool,
    out: Path | None,
    *,
    default_out: Callable[[Prepared], Path] | None = None,
    note: Callable[[str], None] = _quiet,
) -> SweepRun:
    """``axes`` around ``spec``'s base contract, one at a time (or their ``grid``). ``out`` (or ``default_out`` of
    the prepared inputs): checked writable before encoding; ``note`` gets each contract departure."""
    from ..run import preflight
    from ..run.pipeline import prepare
    from ..run.slices import slice_index
    from .execute import run_sweep
    from .plan import plan_cells

    preflight.run_paths(spec, out)  # before loading anything
    prepared = prepare(spec)
    for departure in prepared.contract.departures:  # a changed model is said, not evaluated in silence
        note(f"evalsuite: contract departure: {departure}")
    cells = plan_cells(prepared.contract, axes, grid, info=prepared.model)
    target = out if out is not None else default_out(prepared) if default_out is not None else None
    if target is not None:
        preflight.out_dir(target)
    slices = slice_index(prepared)  # an unknown --slice-by field is an error before encoding
    result = run_sweep(prepared, cells, spec.metrics, axes=axes, grid=grid)
    result.base.slices = slices
    return SweepRun(result, prepared, tuple(cells), target)
