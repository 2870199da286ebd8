"""The sweep of a gated session: its cells (planned before any encoding, one pytest item each), the sweep run once
per session, and every cell's gate outcomes against the base contract judged together."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..base.errors import EvalsuiteError
from .gates import Outcome, Scores
from .verdicts import GateRequest, judge_all

if TYPE_CHECKING:
    from ..run.prepared import Prepared
    from ..slicing import SliceIndex
    from ..sweep.plan import Cell
    from ..sweep.results import SweepResult
    from .ledger import Computed
    from .plan import DatasetPlan, SessionPlan
    from .policy import DatasetPolicy
    from .shared import ComputeOnce

T = TypeVar("T")


class SweepHost(Protocol):
    """What the sweep asks of its session (:class:`~.session.GateSession`)."""

    plan: SessionPlan
    prepared: dict[str, Prepared]
    slices: dict[str, SliceIndex]
    shared: ComputeOnce

    def dataset_plan(self, name: str) -> DatasetPlan: ...

    def dataset_policy(self, name: str) -> DatasetPolicy: ...

    def once(self, what: Computed, name: str, compute: Callable[[], T]) -> T: ...


class SessionSweeps:
    """``session.sweeps``: the session's sweep cells and their verdicts, each computed once per session."""

    def __init__(self, session: SweepHost) -> None:
        self.session = session

    def cells(self, name: str) -> list[Cell]:
        """The cells of a dataset's sweep (pure planning; empty when no sweep is asked)."""
        dp = self.session.dataset_plan(name)
        if not dp.sweep:
            return []
        from ..sweep.plan import plan_cells

        prepared = self.session.prepared[name]
        return plan_cells(prepared.contract, dp.sweep, dp.grid, info=prepared.model)

    def result(self, name: str) -> SweepResult:
        """The dataset's sweep, run once per session (one forward pass per role where possible).

        The sweep loads its own encoders and frees them when done, so the session's shared encoder
        (used by fixtures and the canary) stays alive; the embedding cache shares the vectors.
        """
        from ..sweep.execute import run_sweep

        dp, prepared = self.session.dataset_plan(name), self.session.prepared[name]

        def compute() -> SweepResult:
            result = run_sweep(prepared, self.cells(name), axes=dp.sweep, grid=dp.grid)
            result.base.slices = self.session.slices.get(name)
            return result

        return self.session.once("sweep", name, compute)

    def verdicts(self, name: str) -> dict[str, Outcome | EvalsuiteError]:
        """Every sweep cell's gate outcomes on a dataset against the base, keyed ``cell/gate``, judged together
        once (the cells' significance-based gates are one family, corrected as the session's policy says)."""

        def compute() -> dict[str, Outcome | EvalsuiteError]:
            sweep, gates = self.result(name), self.session.dataset_policy(name).sweep_gates
            base = Scores("base", sweep.base.metrics, sweep.base.per_query)
            index = self.session.slices.get(
                name
            )  # the base contract's membership: cells are paired on the same queries
            requests = [
                GateRequest(
                    f"{c.cell.name}/{g.expr}", g, Scores("cell", c.result.metrics, c.result.per_query, index), base
                )
                for c in sweep.cells
                for g in gates
            ]
            return judge_all(requests, self.session.plan.verdicts.multiplicity)

        return self.session.shared.get(f"sweep-verdicts-{name}", compute)[0]
