"""Plan a sweep: cells around a base contract, and the forward passes they need (pure, no model).

One-at-a-time (default): each cell differs from the base in exactly one axis, except that an
axis is crossed with the axes its declaration ``crosses`` (index x dim). Grid: the full product
of the axes. Forward passes are grouped by ``Contract.forward_key(role)`` of each cell's
contract, so whether an axis value needs a pass of its own follows from the contract alone
(pooling, dim, normalize and index never do; see ``AxisDeclaration.needs_forward_pass``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.errors import SpecError
from ..contract import ROLES, Contract
from .axes import Axis, conflicts

if TYPE_CHECKING:
    from ..model import ModelInfo

BASE_NAME = "base"


@dataclass(frozen=True)
class Cell:
    """One sweep cell: a readable ``name`` (``pooling=cls`` or ``pooling=cls,dim=128``), its
    contract, and the (axis, value label) pairs it sets."""

    name: str
    contract: Contract
    varies: tuple[tuple[str, str], ...]
    same_as_base: bool = False

    @property
    def axis(self) -> str:
        """The axis (or ``+``-joined axes, in a grid) this cell varies."""
        return "+".join(a for a, _ in self.varies) or BASE_NAME

    @property
    def value(self) -> str:
        return ",".join(v for _, v in self.varies) or BASE_NAME

    def label(self, axis: str) -> str | None:
        """The value label this cell gives ``axis``, or None when it leaves the axis at the base."""
        return dict(self.varies).get(axis)


@dataclass(frozen=True)
class ForwardPass:
    """One forward pass over one role's texts; it serves every listed pooling. ``contract`` renders
    the pass's texts and sets its encoder (every contract sharing ``key`` does both alike)."""

    role: str
    key: tuple[str, ...]
    poolings: tuple[str, ...]
    cells: tuple[str, ...]
    contract: Contract

    @property
    def dtype(self) -> str:
        return self.contract.dtype

    @property
    def max_length(self) -> int:
        return self.contract.max_length

    @property
    def prefix(self) -> str:
        return self.contract.prefix(self.role)

    @property
    def encoder_key(self) -> tuple[str, int]:
        return (self.dtype, self.max_length)


def base_cell(base: Contract) -> Cell:
    return Cell(BASE_NAME, base, (), same_as_base=True)


def _cell(base: Contract, settings: Sequence[tuple[Axis, int]]) -> Cell:
    contract = base
    varies = []
    for axis, i in settings:
        value = axis.values[i]
        contract = axis.declaration.apply(contract, value.value)
        varies.append((axis.name, value.label))
    name = ",".join(f"{a}={label}" for a, label in varies)
    return Cell(name, contract, tuple(varies), same_as_base=contract == base)


def plan_cells(
    base: Contract, axes: Sequence[Axis], grid: bool = False, *, info: ModelInfo | None = None
) -> list[Cell]:
    """The cells of a sweep, in axis order. A cell whose contract equals the base is kept (its
    row shows the base value) and marked ``same_as_base``; it is never encoded twice."""
    if not axes:
        raise SpecError("a sweep needs at least one axis (e.g. --vary pooling=cls,mean,last)")
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise SpecError(f"axis given twice in {names}; merge the values into one --vary")
    if grid:
        clash = conflicts(axes)
        if clash:
            a, b, field = clash[0]
            raise SpecError(
                f"--grid cannot cross {a} with {b}: both set the contract's {field}; "
                "drop --grid or vary only one of them"
            )
        combos = itertools.product(*(range(len(a.values)) for a in axes))
        plans = [list(zip(axes, combo, strict=True)) for combo in combos]
    else:
        plans = []
        for group in _crossing_groups(axes):
            combos = itertools.product(*(range(len(a.values)) for a in group))
            plans += [list(zip(group, combo, strict=True)) for combo in combos]
    cells = []
    for settings in plans:
        try:
            cells.append(_cell(base, settings))
        except SpecError as exc:
            where = ",".join(f"{a.name}={a.values[i].label}" for a, i in settings)
            raise SpecError(f"sweep cell {where}: {exc}") from None
    validate_cells(cells, base, info)
    return cells


def _crossing_groups(axes: Sequence[Axis]) -> list[list[Axis]]:
    """Axes one at a time, except that an axis is crossed with the axes its declaration
    ``crosses`` (or that cross it), in the order given."""
    groups: list[list[Axis]] = []
    placed: set[str] = set()
    for axis in axes:
        if axis.name in placed:
            continue
        group = [
            b
            for b in axes
            if b.name not in placed
            and (b is axis or b.name in axis.declaration.crosses or axis.name in b.declaration.crosses)
        ]
        clash = conflicts(group)
        if clash:
            a, b, field = clash[0]
            raise SpecError(f"{a} is crossed with {b} but both set the contract's {field}; vary only one of them")
        placed |= {b.name for b in group}
        groups.append(group)
    return groups


def validate_cells(cells: Sequence[Cell], base: Contract, info: ModelInfo | None = None) -> None:
    """Check every cell against what the model supports (dim, Matryoshka dims, max length)."""
    declared = base.matryoshka_dims or (info.matryoshka_dims if info else None)
    hidden = info.hidden_size if info else None
    allowed = set(declared or ()) | {base.dim} | ({hidden} if hidden else set())
    for cell in cells:
        c = cell.contract
        if hidden is not None and c.dim > hidden:
            raise SpecError(f"sweep cell {cell.name}: dim {c.dim} exceeds the model's output dimension {hidden}")
        if declared and c.dim not in allowed:
            raise SpecError(
                f"sweep cell {cell.name}: dim {c.dim} is not one of the Matryoshka dimensions the "
                f"model declares {list(declared)}"
            )
        if info is not None and c.max_length > info.max_positions:
            raise SpecError(
                f"sweep cell {cell.name}: max_length {c.max_length} exceeds what the model supports "
                f"({info.max_positions} tokens)"
            )


def plan_passes(base: Contract, cells: Sequence[Cell]) -> list[ForwardPass]:
    """The forward passes the base and ``cells`` need, one per (role, forward key), each
    listing every pooling computed from it; ordered so passes sharing an encoder are adjacent."""
    poolings: dict[tuple[str, ...], dict[str, None]] = {}
    users: dict[tuple[str, ...], dict[str, None]] = {}
    first: dict[tuple[str, ...], tuple[str, Contract]] = {}
    for cell in [base_cell(base), *cells]:
        for role in ROLES:
            key = cell.contract.forward_key(role)
            poolings.setdefault(key, {})[cell.contract.pooling] = None
            users.setdefault(key, {})[cell.name] = None
            first.setdefault(key, (role, cell.contract))
    passes = [
        ForwardPass(role=first[key][0], key=key, poolings=tuple(p), cells=tuple(users[key]), contract=first[key][1])
        for key, p in poolings.items()
    ]
    order = {k: i for i, k in enumerate(dict.fromkeys(p.encoder_key for p in passes))}
    return sorted(passes, key=lambda p: order[p.encoder_key])
