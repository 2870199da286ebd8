"""State of one gated pytest session: prepared datasets, results computed once, outcomes.

Under pytest-xdist every worker holds one of these. Results are computed once per session
whichever worker asks first: the others wait on a file lock and read the pickled result from
the directory the controller shares with its workers. Outcomes travel back to the controller
as plain dicts (``to_output`` / ``merge``).
"""

from __future__ import annotations

import fcntl
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from .baseline import REVISION_FIELDS, Baseline, comparability, load_baseline, write_baseline
from .encode.base import Encoder
from .errors import SpecError
from .gates import Gate, Outcome, Scores, default_gates
from .io import atomic_write_bytes
from .pipeline import Prepared, make_encoder, prepare, run
from .result import Result
from .specfile import DatasetPlan, SessionPlan

T = TypeVar("T")


@dataclass(frozen=True)
class Reference:
    """What a candidate is compared with: a baseline file or a reference revision's result."""

    label: str
    scores: Scores
    contract: Any
    dataset_sha256: str
    ignore: tuple[str, ...]


class GateSession:
    def __init__(self, plan: SessionPlan, shared_dir: Path | None = None, canary: Any = None) -> None:
        self.plan = plan
        self.canary = canary
        self._canary_contexts: dict[str, Any] = {}
        self.canary_verdicts: list[dict[str, Any]] = []
        self.shared_dir = shared_dir
        self.prepared: dict[str, Prepared] = {}
        self.reference_prepared: dict[str, Prepared] = {}
        self.baselines: dict[str, Baseline] = {}
        self.gates: dict[str, tuple[Gate, ...]] = {}
        self.sweep_gates: dict[str, tuple[Gate, ...]] = {}
        self.notes: list[str] = []
        self._memo: dict[str, Any] = {}
        self._encoders: dict[tuple, Encoder] = {}
        self.outcomes: list[dict[str, Any]] = []
        self.summaries: dict[str, dict[str, Any]] = {}
        self.baselines_written: list[str] = []
        self.computations: list[str] = []
        self.worker = "main"

    @property
    def datasets(self) -> tuple[DatasetPlan, ...]:
        return self.plan.datasets

    def dataset_plan(self, name: str) -> DatasetPlan:
        return next(d for d in self.plan.datasets if d.name == name)

    # -- before any encoding ----------------------------------------------------------------------
    def prepare_all(self) -> None:
        """Pin every model revision and load every dataset and baseline; raises EvalsuiteError."""
        plan = self.plan
        for dp in plan.datasets:
            self.prepared[dp.name] = prepare(dp.spec)
            if plan.has_reference_run:
                ref_spec = dp.spec.replace(model=plan.reference_model or dp.spec.model,
                                           model_rev=plan.reference_rev, tokenizer_rev=None)
                self.reference_prepared[dp.name] = prepare(ref_spec)
            elif dp.baseline is not None and not plan.update_baseline:
                self.baselines[dp.name] = load_baseline(dp.baseline)
            gates = dp.gates
            has_reference = dp.name in self.baselines or dp.name in self.reference_prepared
            if not gates and has_reference and not plan.update_baseline:
                metrics = list(self.baselines[dp.name].metrics) if dp.name in self.baselines else list(dp.spec.metrics)
                metrics = [m for m in metrics if m in dp.spec.metrics] or list(dp.spec.metrics)
                gates = default_gates(metrics)
                self.notes.append(f"{dp.name}: no gates given; default gates applied: "
                                  + ", ".join(g.expr for g in gates))
            relative = [g.expr for g in gates if g.needs_reference]
            if relative and not has_reference and not plan.update_baseline:
                if not dp.sweep:
                    raise SpecError(f"{dp.name}: gate(s) {', '.join(relative)} compare against a reference; "
                                    "pass --baseline FILE or --reference-rev REV, or use a floor (METRIC>=VALUE)")
                self.notes.append(f"{dp.name}: no baseline; gate(s) {', '.join(relative)} apply to sweep cells only")
            self.gates[dp.name] = tuple(g for g in gates
                                        if has_reference or plan.update_baseline or not g.needs_reference)
            if dp.sweep:
                self.sweep_cells(dp.name)  # cells that do not fit the model are errors now, before encoding
                self.sweep_gates[dp.name] = gates or default_gates(dp.spec.metrics)
                if not gates:
                    self.notes.append(f"{dp.name}: sweep cells gated against the base with default gates: "
                                      + ", ".join(g.expr for g in self.sweep_gates[dp.name]))

    # -- computed once per session ------------------------------------------------------------------
    def _once(self, key: str, compute: Callable[[], T]) -> T:
        if key in self._memo:
            return self._memo[key]
        def counted() -> T:
            self.computations.append(f"{key} in {self.worker}")
            return compute()

        if self.shared_dir is None:
            value = counted()
        else:
            self.shared_dir.mkdir(parents=True, exist_ok=True)
            blob = self.shared_dir / f"{key}.pkl"
            with open(self.shared_dir / f"{key}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if blob.is_file():
                    value = pickle.loads(blob.read_bytes())
                else:
                    value = counted()
                    atomic_write_bytes(blob, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        self._memo[key] = value
        return value

    def computed(self, key: str) -> Any | None:
        """A value computed by this process or (under xdist) by a worker, without computing it."""
        if key in self._memo:
            return self._memo[key]
        if self.shared_dir is not None and (self.shared_dir / f"{key}.pkl").is_file():
            return pickle.loads((self.shared_dir / f"{key}.pkl").read_bytes())
        return None

    def encoder(self, prepared: Prepared) -> Encoder:
        """One local encoder per forward configuration, shared by results, fixtures and the canary."""
        c = prepared.contract
        key = (c.model_revision, c.tokenizer_revision, c.dtype, c.max_length, c.truncation)
        if key not in self._encoders:
            self._encoders[key] = make_encoder(prepared)
        return self._encoders[key]

    def sweep_cells(self, name: str) -> list[Any]:
        """The cells of a dataset's sweep (pure planning; empty when no sweep is asked)."""
        dp = self.dataset_plan(name)
        if not dp.sweep:
            return []
        from .sweep import plan_cells

        prepared = self.prepared[name]
        return plan_cells(prepared.contract, dp.sweep, dp.grid, info=prepared.model)

    def sweep(self, name: str) -> Any:
        """The dataset's sweep, run once per session (one forward pass per role where possible).

        The sweep loads its own encoders and frees them when done, so the session's shared encoder
        (used by fixtures and the canary) stays alive; the embedding cache shares the vectors.
        """
        from .sweep import run_sweep

        dp, prepared = self.dataset_plan(name), self.prepared[name]
        return self._once(f"sweep-{name}", lambda: run_sweep(prepared, self.sweep_cells(name),
                                                             axes=dp.sweep, grid=dp.grid))

    def result(self, name: str) -> Result:
        def compute() -> Result:
            prepared = self.prepared[name]
            result = run(prepared.spec, prepared, encoder=self.encoder(prepared))
            dp = self.dataset_plan(name)
            if self.plan.update_baseline and dp.baseline is not None:
                write_baseline(result, dp.baseline)
                self.baselines_written.append(f"{name}: {dp.baseline}")
            return result

        result = self._once(f"candidate-{name}", compute)
        self.summaries.setdefault(name, {})["metrics"] = dict(result.metrics)
        return result

    def reference(self, name: str) -> Reference | None:
        if name in self.baselines:
            b = self.baselines[name]
            ref = Reference("baseline", b.scores(), b.contract, b.dataset_sha256, ())
        elif name in self.reference_prepared:
            rp = self.reference_prepared[name]
            r = self._once(f"reference-{name}", lambda: run(rp.spec, rp, encoder=self.encoder(rp)))
            ref = Reference(f"reference {r.contract.model_revision[:12]}",
                            Scores("reference", r.metrics, r.per_query), r.contract,
                            r.dataset.identity.sha256, REVISION_FIELDS)
        else:
            return None
        self.summaries.setdefault(name, {}).update(reference=dict(ref.scores.metrics), label=ref.label)
        return ref

    def contract_problems(self, name: str) -> list[str]:
        ref = self.reference(name)
        if ref is None:
            return []
        p = self.prepared[name]
        return comparability(ref.contract, ref.dataset_sha256, p.contract, p.dataset.identity.sha256,
                             ignore=ref.ignore, labels=(ref.label.split()[0], "candidate"))

    # -- canary ------------------------------------------------------------------------------------
    def canary_checks(self, name: str) -> list[str]:
        """Endpoint checks for a dataset: all of them for the first, retrieval agreement for the others."""
        if self.canary is None:
            return []
        from .canary.checks import check_names

        names = check_names(self.canary)
        return names if name == self.datasets[0].name else [n for n in names if n == "retrieval_agreement"]

    def canary_context(self, name: str) -> Any:
        if name not in self._canary_contexts:
            from .canary.checks import CanaryContext
            from .reference import ContractEncoder

            prepared = self.prepared[name]
            self._canary_contexts[name] = CanaryContext(
                self.canary, prepared,
                reference_encoder=lambda: ContractEncoder(self.encoder(prepared), prepared.contract),
                reference_result=lambda: self.result(name))
        return self._canary_contexts[name]

    def record_verdict(self, name: str, verdict: Any) -> None:
        self.canary_verdicts.append({"dataset": name, **verdict.to_dict()})

    def close(self) -> None:
        for ctx in self._canary_contexts.values():
            ctx.close()
        self._canary_contexts.clear()

    def record(self, name: str, outcome: Outcome, item: str) -> None:
        self.outcomes.append({"dataset": name, "item": item, **outcome.to_dict()})

    # -- xdist plumbing -----------------------------------------------------------------------------
    def to_output(self) -> dict[str, Any]:
        return {"outcomes": self.outcomes, "summaries": self.summaries, "baselines_written": self.baselines_written,
                "computations": self.computations, "canary_verdicts": self.canary_verdicts}

    def merge(self, data: dict[str, Any]) -> None:
        self.outcomes.extend(data.get("outcomes", []))
        for name, summary in data.get("summaries", {}).items():
            self.summaries.setdefault(name, {}).update(summary)
        self.baselines_written.extend(data.get("baselines_written", []))
        self.computations.extend(data.get("computations", []))
        self.canary_verdicts.extend(data.get("canary_verdicts", []))
