"""One gated pytest session: prepared datasets and baselines, the policy, results computed once and the
ledger of what happened. Its jobs beside the gates have their own objects: the sweep cells' items
(:class:`~.sweeps.SessionSweeps`, ``session.sweeps``), the canary's items (:class:`~.canary_items.SessionCanary`,
``session.canary_items``) and the release history (:class:`~.history_items.SessionHistory`, ``session.history``);
the report at the end is made from the session by :func:`.finish.session_report` (syrupy's split: the session
owns state, the report owns presentation).

Under pytest-xdist every worker holds one of these: results are computed once per session by
whichever worker asks first (`shared.py`), outcomes travel to the controller in the ledger.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..base.errors import EvalsuiteError, SpecError
from ..encode.base import Encoder
from ..encode.ray_pool import Pools, close_pools, executor_scope
from ..run.pipeline import Prepared, make_encoder, prepare, run
from ..run.result import Result
from ..run.slices import slice_index
from ..slicing import SliceIndex
from .baseline import Baseline, load_baseline, write_baseline
from .canary_items import SessionCanary
from .gates import Gate, Outcome, Scores
from .history_items import SessionHistory
from .kinds import kind_of
from .ledger import (
    BaselineWritten,
    CandidateSeen,
    Computation,
    Computed,
    Ledger,
    Record,
    ReferenceSeen,
    RerankedSeen,
)
from .plan import DatasetPlan, SessionPlan
from .policy import DatasetPolicy, SessionPolicy, session_policy
from .reference import Reference
from .releases import RELEASE_FIELDS
from .reranker import SessionReranker
from .shared import ComputeOnce
from .slices import check_gate_slices
from .stages import RerankedStage, Stages, gate_sides, side_labels
from .sweeps import SessionSweeps
from .verdicts import GateRequest, judge_all

if TYPE_CHECKING:
    import pytest

    from ..canary.embedding.settings import CanarySettings
    from ..canary.reranker.settings import RerankCanarySettings

T = TypeVar("T")
EncoderKey = tuple[str, str, str, int, str]


class SessionPart(Protocol):
    """A job's part of the session (the audit of a store, the loss budget): made from the job's request by its
    ``PytestPart`` (`parts.py`), its items collected beside the session's own, closed with the session."""

    def items(self, parent: pytest.Session, anchor: Path) -> list[pytest.Item]: ...

    def close(self) -> None: ...


class GateSession:
    """The coordinator of one gated pytest session: it prepares each dataset of the plan (and its baseline and
    reference), computes each result once (``once``: across xdist workers), judges the gates under the session's
    policy (``verdicts``) and records what happened (``ledger``); its other jobs are parts it holds — ``sweeps``,
    ``canary_items``, ``history``, ``reranker`` — each behind a Protocol of what it needs from the session."""

    def __init__(
        self,
        plan: SessionPlan,
        shared: ComputeOnce | None = None,
        *,
        canary: CanarySettings | tuple[CanarySettings, ...] | None = None,
        rerank_canary: RerankCanarySettings | None = None,
        worker: str = "main",
        gate_endpoint: bool = False,
    ) -> None:
        members = () if canary is None else canary if isinstance(canary, tuple) else (canary,)
        if gate_endpoint and not members:
            raise SpecError("--gate-endpoint gates the model as served at --endpoint URL; give --endpoint")
        self.plan = plan
        # --endpoint (repeated: a fleet): every canary check runs against each member on its own
        self.canary_members: tuple[CanarySettings, ...] = members
        self.canary = members[0] if members else None
        self.rerank_canary = rerank_canary  # --reranker-endpoint: the reranker checks, with the plan's reranker
        self.gate_endpoint = gate_endpoint  # the candidate result comes from the served endpoint
        self.worker = worker
        self.shared = shared or ComputeOnce()
        self.ledger = Ledger()
        self.prepared: dict[str, Prepared] = {}
        self.reference_prepared: dict[str, Prepared] = {}
        self.baselines: dict[str, Baseline] = {}
        self.policy = SessionPolicy(())
        self._encoders: dict[EncoderKey, Encoder] = {}
        self._seen: set[tuple[str, str]] = set()
        self.slices: dict[str, SliceIndex] = {}
        self.reranker: SessionReranker | None = None  # the second stage, when the plan has a reranker
        self.sweeps = SessionSweeps(self)  # the sweep cells' items
        self.canary_items = SessionCanary(self)  # the canary's items (both families)
        self.history = SessionHistory(self)  # the earlier releases the history gates compare with
        self.parts: dict[str, SessionPart] = {}  # the other jobs' parts, by job name (attach)
        # on Ray: one actor pool for every computation of the session (the model loaded once per actor), closed by close()
        self._pools: Pools = {}

    @property
    def datasets(self) -> tuple[DatasetPlan, ...]:
        return self.plan.datasets

    def dataset_plan(self, name: str) -> DatasetPlan:
        return next(d for d in self.plan.datasets if d.name == name)

    def dataset_policy(self, name: str) -> DatasetPolicy:
        return self.policy.dataset(name)

    # -- before any encoding ----------------------------------------------------------------------
    def prepare_all(self) -> None:
        """Pin every model revision, load every dataset and baseline, decide the policy, plan the
        sweeps (a cell that does not fit the model is an error now); raises EvalsuiteError."""
        plan = self.plan
        for dp in plan.datasets:
            self.prepared[dp.name] = prepare(dp.spec)
            self.slices[dp.name] = slice_index(self.prepared[dp.name])  # tokens counted, no model loaded
            check_gate_slices(dp.gates, self.slices[dp.name], dp.name)
            if plan.has_reference_run:
                self.reference_prepared[dp.name] = prepare(
                    dp.spec.replace(
                        model=plan.reference_model or dp.spec.model, model_rev=plan.reference_rev, tokenizer_rev=None
                    )
                )
            elif dp.baseline is not None and not plan.update_baseline:
                self.baselines[dp.name] = load_baseline(dp.baseline)
        if plan.rerank is not None:
            self.reranker = SessionReranker(plan.rerank)
        self.policy = session_policy(plan, {name: tuple(b.metrics) for name, b in self.baselines.items()})
        for dp in plan.datasets:
            self.sweeps.cells(dp.name)

    # -- computed once per session ------------------------------------------------------------------
    def once(self, what: Computed, name: str, compute: Callable[[], T]) -> T:
        with executor_scope(self._pools):
            value, computed = self.shared.get(f"{what}-{name}", compute)
        if computed:
            self.ledger.add(Computation(what, name, self.worker))
        return value

    def _record_once(self, record: Record, key: tuple[str, str]) -> None:
        if key not in self._seen:
            self._seen.add(key)
            self.ledger.add(record)

    def encoder(self, prepared: Prepared) -> Encoder:
        """One local encoder per forward configuration, shared by results, fixtures and the canary."""
        c = prepared.contract
        key = (c.model_revision, c.tokenizer_revision, c.dtype, c.max_length, c.truncation)
        if key not in self._encoders:
            self._encoders[key] = make_encoder(prepared)
        return self._encoders[key]

    def served(self, prepared: Prepared) -> Prepared:
        """``prepared`` with the canary's endpoint and client settings: the model as served is the encoder."""
        import dataclasses

        s = self.canary
        if s is None:
            raise SpecError("--gate-endpoint gates the model as served at --endpoint URL; give --endpoint")
        spec = prepared.spec.replace(
            endpoints=tuple(m.endpoint for m in self.canary_members),
            served_model=s.served_model,
            api_key_env=s.api_key_env,
            endpoint_timeout=s.timeout,
            endpoint_concurrency=s.concurrency,
            endpoint_batch_size=s.batch_size,
            encoding_format=s.encoding_format,
        )
        return dataclasses.replace(prepared, spec=spec)

    def local_result(self, name: str) -> Result:
        """The local reference model's result on a dataset (what the canary compares the served one with)."""
        if not self.gate_endpoint:
            return self.result(name)
        prepared = self.prepared[name]

        def compute() -> Result:
            result = run(prepared.spec, prepared, encoder=self.encoder(prepared))
            result.slices = self.slices.get(name)
            return result

        return self.once("local", name, compute)

    def _candidate(self, name: str) -> Result:
        """The candidate's first-stage result on a dataset (the model as served with ``--gate-endpoint``)."""

        def compute() -> Result:
            prepared = self.prepared[name]
            if self.gate_endpoint:
                served = self.served(prepared)
                result = run(served.spec, served)
            else:
                result = run(prepared.spec, prepared, encoder=self.encoder(prepared))
            result.slices = self.slices.get(name)
            return result

        return self.once("candidate", name, compute)

    def result(self, name: str) -> Result:
        """The candidate's result on a dataset, and its reranked stage when the session has a reranker; writes
        the baseline when the session updates it."""
        result = self._candidate(name)
        if self.reranker is not None:
            self.reranked(name)
        baseline = self.dataset_plan(name).baseline
        if self.plan.update_baseline and baseline is not None:
            # apart from the result: a failed write must not make the next item evaluate again
            self.shared.get(f"baseline-{name}", lambda: self._write_baseline(name, result, baseline))
        self._record_once(CandidateSeen(name, dict(result.metrics)), ("candidate", name))
        return result

    def _need_reranker(self) -> SessionReranker:
        if self.reranker is None:
            raise SpecError("the reranked stage needs a reranker; pass --reranker DIR")
        return self.reranker

    def reranked(self, name: str) -> RerankedStage:
        """The candidate's reranked stage on a dataset: its first stage's top N reranked, computed once."""
        reranker = self._need_reranker()
        stage = self.once("reranked", name, lambda: reranker.rerank(self._candidate(name), self.prepared[name].spec))
        self._record_once(RerankedSeen(name, "candidate", dict(stage.metrics)), ("reranked", name))
        return stage

    def reference_reranked(self, name: str) -> RerankedStage | None:
        """The reranked stage of the side the gates compare with: the baseline file's (None when it was written
        without a reranker), or the same reranker over the reference run's first stage, computed once."""
        if name in self.baselines:
            stage = self.baselines[name].reranked
        elif name in self.reference_prepared:
            reranker, rp = self._need_reranker(), self.reference_prepared[name]
            stage = self.once(
                "reference-reranked", name, lambda: reranker.rerank(self._reference_result(name), rp.spec)
            )
        else:
            return None
        if stage is not None:
            self._record_once(RerankedSeen(name, "reference", dict(stage.metrics)), ("reference-reranked", name))
        return stage

    def _write_baseline(self, name: str, result: Result, path: Path) -> Path:
        try:
            written = write_baseline(result, path, self.reranked(name) if self.reranker is not None else None)
        except OSError as exc:
            raise SpecError(
                f"--update-baseline: cannot write the baseline {path} ({exc.strerror or exc}); "
                "choose a --baseline path in a directory you can write"
            ) from None
        self.ledger.add(BaselineWritten(name, path))
        return written

    def reference(self, name: str) -> Reference | None:
        """The side the dataset's gates compare with (computing a reference run once), or None."""
        if name in self.baselines:
            ref = Reference.from_baseline(self.baselines[name])
        elif name in self.reference_prepared:
            ref = Reference.from_result(self._reference_result(name))
        else:
            return None
        self._record_once(ReferenceSeen(name, ref.kind, ref.label, dict(ref.scores.metrics)), ("reference", name))
        return ref

    def _reference_result(self, name: str) -> Result:
        rp = self.reference_prepared[name]
        return self.once("reference", name, lambda: run(rp.spec, rp, encoder=self.encoder(rp)))

    def stages(self, name: str, gates: tuple[Gate, ...]) -> tuple[Stages, Stages | None]:
        """Both sides of a dataset's gates at each stage they have: the candidate's (at the reference's
        precision) and the reference's (its reranked stage only when one of ``gates`` compares it)."""
        result, ref = self.result(name), self.reference(name)
        first = Scores("candidate", result.metrics, result.per_query, result.slices)
        reranked = self.reranked(name).scores("candidate", result.slices) if self.reranker is not None else None
        if ref is None:
            return Stages(first, reranked), None
        candidate = Stages(ref.comparable(first), ref.comparable(reranked) if reranked is not None else None)
        ref_stage = (
            self.reference_reranked(name) if any(g.needs_reranker and g.needs_reference for g in gates) else None
        )
        return candidate, Stages(ref.scores, ref_stage.scores(ref.kind) if ref_stage is not None else None)

    def labels(self, name: str, gate: Gate) -> tuple[str, str]:
        """How a gate's messages name its (reference, candidate) sides."""
        if kind_of(gate).against == "history":
            return self.history.label(name, gate), "candidate"
        ref = self.reference(name) if gate.needs_reference else None
        return side_labels(kind_of(gate).against, ref.label if ref else "baseline")

    def verdicts(self) -> dict[str, Outcome | EvalsuiteError]:
        """Every gate item's outcome, keyed by :meth:`verdict_key`, judged together once per session
        (the multiplicity correction needs every p-value; under xdist one worker computes, all read)."""

        def compute() -> dict[str, Outcome | EvalsuiteError]:
            requests = []
            errors: dict[str, Outcome | EvalsuiteError] = {}
            for dp in self.datasets:
                gates = self.dataset_policy(dp.name).gates
                if not gates:
                    continue
                candidate, reference = self.stages(dp.name, gates)
                for g in gates:
                    if reference is None and g.needs_reference:
                        continue
                    key = self.verdict_key(dp.name, g)
                    if kind_of(g).against == "history":  # earlier releases: `releases.py`
                        try:
                            errors[key] = self.history.outcome(dp.name, g, candidate.first)
                        except EvalsuiteError as exc:
                            errors[key] = exc
                        continue
                    try:
                        requests.append(GateRequest(key, g, *gate_sides(g, kind_of(g).against, candidate, reference)))
                    except EvalsuiteError as exc:
                        errors[key] = exc
            return {**errors, **judge_all(requests, self.plan.verdicts.multiplicity)}

        return self.shared.get("verdicts", compute)[0]

    @staticmethod
    def verdict_key(dataset: str, gate: Gate) -> str:
        return f"{dataset}/{gate.expr}"

    def contract_problems(self, name: str) -> list[str]:
        """Why the candidate is not comparable with the reference side: contract and dataset, and the reranker
        when a gate compares the reranked stage with a baseline."""
        ref = self.reference(name)
        if ref is None:
            return []
        p = self.prepared[name]
        problems = ref.problems(p.contract, p.dataset.identity.sha256)
        if self.plan.history is not None and ref.kind == "baseline":  # a release pipeline: the baseline is the
            problems = [x for x in problems if x.split(":")[0] not in RELEASE_FIELDS]  # previous release's revision
        stage = self.baselines[name].reranked if name in self.baselines else None
        staged = any(g.needs_reranker and g.needs_reference for g in self.dataset_policy(name).gates)
        if self.reranker is not None and stage is not None and staged:
            problems += self.reranker.problems(stage)
        return problems

    def attach(self, job: str, part: SessionPart) -> None:
        """Hold a job's part (its items collected with the session's, closed with it)."""
        self.parts[job] = part

    def close(self) -> None:
        for part in self.parts.values():
            part.close()
        close_pools(self._pools)
        self.canary_items.close()
