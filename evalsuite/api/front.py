"""The four front-door functions: each builds its command's settings from keywords (:mod:`.keywords`: the
command's options under their destination names, checked by the same parsers) and runs the same job the command
runs, quietly; it writes the command's files only when ``out`` is given, and raises the command's typed errors
(:class:`~evalsuite.base.errors.EvalsuiteError`: a usage or input error, what the command exits 2 on)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .keywords import namespace

if TYPE_CHECKING:
    from ..budget.job import BudgetReport
    from ..run.prepared import Prepared
    from ..run.spec import RunSpec
    from .results import AuditResult, CanaryReport, Evaluation, SweepReport


def _quiet(line: str) -> None:
    return None


def _given(model: str | None, dataset: str | None, settings: Mapping[str, object]) -> dict[str, object]:
    """The keywords with ``model`` and ``dataset`` (None: the bundled model, the bundled dataset)."""
    named = {"model": model, "dataset": dataset}
    return {**{k: v for k, v in named.items() if v is not None}, **settings}


def evaluate(
    model: str | Path | None = None,
    dataset: str | Path | None = None,
    *,
    out: str | Path | None = None,
    history: str | Path | None = None,
    **settings: object,
) -> Evaluation:
    """Evaluate one contract on one dataset, as `evalsuite run` does: ``evaluate()`` is the bundled model on the
    bundled dataset; ``settings`` are `evalsuite run`'s options (``pooling="cls"``, ``dim=128``,
    ``metrics="ndcg@10,recall@100"``, ``use_cache=False``, ``endpoint="http://host:8000/v1"``, ...). ``out``: also
    write the run's reports there; ``history``: add the run to that release history."""
    from ..run.options import RUN_ENDPOINT_OPTIONS, RUN_OPTIONS, collect
    from ..run.spec import RunSpec

    source = "evalsuite.evaluate()"
    options = (*RUN_OPTIONS, *RUN_ENDPOINT_OPTIONS)
    args = namespace(options, _given(_str(model), _str(dataset), settings), source=source)
    spec = RunSpec.from_mapping(collect(args, options), source=source)
    return evaluate_spec(spec, Path(out) if out is not None else None, history=_str(history))


def evaluate_spec(
    spec: RunSpec,
    out: Path | None,
    *,
    default_out: Callable[[Prepared], Path] | None = None,
    history: str | None = None,
    note: Callable[[str], None] = _quiet,
) -> Evaluation:
    """The run job (`evalsuite run` and :func:`evaluate`): every path it writes checked before anything loads, the
    inputs prepared (``note`` gets what was decided), encoded, searched and scored; the reports written to ``out``
    (or ``default_out`` of the prepared inputs; neither: none); the run added to ``history``."""
    from ..history.store import HistoryStore
    from ..reports import write_run_reports
    from ..run import preflight
    from ..run.pipeline import prepare, run
    from ..run.slices import slice_index
    from .results import Evaluation

    preflight.run_paths(spec, out)  # before loading anything
    if history:  # the release history: writable, its records readable
        HistoryStore(history).check_writable()
        HistoryStore(history).records()
    prepared = prepare(spec)
    for line in prepared.notes:
        note(f"evalsuite: {line}")
    target = out if out is not None else default_out(prepared) if default_out is not None else None
    if target is not None:
        preflight.out_dir(target)
    slices = slice_index(prepared)  # an unknown --slice-by field is an error before encoding
    result = run(spec, prepared, with_fingerprint=True)  # manifest.json carries it for `evalsuite verify`
    result.slices = slices
    paths = write_run_reports(result, target) if target is not None else {}
    if history:  # the run's record (no gate judged), written atomically under the lock
        from ..gating.releases import record_of

        record = record_of(prepared.dataset.identity.name, prepared, result, (), {})
        paths["history"] = HistoryStore(history).put(record)
    return Evaluation(result, prepared, paths)


def sweep(
    model: str | Path | None = None,
    dataset: str | Path | None = None,
    *,
    vary: Mapping[str, Sequence[object] | str] | Sequence[str] | str,
    grid: bool = False,
    out: str | Path | None = None,
    **settings: object,
) -> SweepReport:
    """Vary one setting at a time around the base contract (every combination with ``grid=True``), as `evalsuite
    sweep` does: ``vary={"pooling": ["cls", "mean"], "dim": [384, 128]}`` (or ``["pooling=cls,mean"]``, as
    ``--vary`` takes them); ``settings``: the base's options, as for :func:`evaluate`."""
    from ..run.options import RUN_OPTIONS, collect
    from ..run.spec import RunSpec
    from ..sweep.axes import axes_from_spec
    from ..sweep.job import run_sweep_job
    from ..sweep.reports import write_sweep_reports
    from .results import SweepReport

    source = "evalsuite.sweep()"
    args = namespace(RUN_OPTIONS, _given(_str(model), _str(dataset), settings), source=source)
    spec = RunSpec.from_mapping(collect(args), source=source)
    axes = axes_from_spec(dict(vary) if isinstance(vary, Mapping) else vary, source=f"{source} vary")
    job = run_sweep_job(spec, axes, bool(grid), Path(out) if out is not None else None)
    paths = write_sweep_reports(job.result, job.out) if job.out is not None else {}
    return SweepReport(job.result, job.prepared, paths)


def canary(
    endpoint: str | Sequence[str],
    model: str | Path | None = None,
    dataset: str | Path | None = None,
    *,
    out: str | Path | None = None,
    rounds: int = 1,
    interval: float = 0.0,
    **settings: object,
) -> CanaryReport:
    """Check a served ``/v1/embeddings`` endpoint (several URLs: a fleet, each member on its own) against the local
    reference, as `evalsuite canary --endpoint URL` does; ``settings``: its options (``canary_min_cosine=0.995``,
    ``api_key_env="MY_KEY"``, ``served_model=...``, and the run's, as for :func:`evaluate`). With
    ``retrieval="sparse"`` the endpoint is a served sparse one (``sparse_api="vllm"`` or ``"tei"``), checked by the
    sparse family, as `evalsuite canary --endpoint URL --retrieval sparse` does."""
    from ..canary.embedding.options import CANARY_FLEET_OPTIONS
    from ..canary.rounds import INTERVAL, ROUNDS, run_embedding_canary
    from ..canary.sparse.job import is_sparse, run_sparse_job
    from ..canary.sparse.options import SPARSE_CANARY_OPTIONS
    from ..run.options import RUN_OPTIONS, collect
    from ..run.spec import RunSpec
    from .results import CanaryReport

    given = {"endpoint": endpoint, "rounds": rounds, "interval": interval, **settings}
    args = namespace(
        (*RUN_OPTIONS, *CANARY_FLEET_OPTIONS, ROUNDS, INTERVAL, *SPARSE_CANARY_OPTIONS),
        _given(_str(model), _str(dataset), given),
        source="evalsuite.canary()",
    )
    target = Path(out) if out is not None else None
    spec = RunSpec.from_mapping(collect(args), source="evalsuite.canary()")
    run = run_sparse_job(args, spec, target) if is_sparse(spec) else run_embedding_canary(args, target)
    return CanaryReport(run, run.write(target) if target is not None else {})


def audit(
    index: str | Path,
    model: str | Path | None = None,
    dataset: str | Path | None = None,
    *,
    out: str | Path | None = None,
    **settings: object,
) -> AuditResult:
    """Audit a built vector index (``"faiss:PATH"``, ``"postgresql://..."``, ``"lancedb:DIR?table=T"``) against the
    reference that should have made it, as `evalsuite audit --index URI` does; ``settings``: its options (``ids=``,
    ``baseline_index=``, ``endpoint=``, ``audit_detect``-style settings under their names: ``detect=0.05``,
    ``max_delta=0.02``, ``gates=[...]``, and the run's, as for :func:`evaluate`)."""
    from ..audit.job import AUDIT_OPTIONS, run_audit_job
    from .results import AuditResult

    given = {"index_uri": str(index), **settings}
    args = namespace(AUDIT_OPTIONS, _given(_str(model), _str(dataset), given), source="evalsuite.audit()")
    target = Path(out) if out is not None else None
    report = run_audit_job(args, target)
    result = AuditResult(report)
    return AuditResult(report, result.write(target)) if target is not None else result


def budget(
    model: str | Path | None = None,
    dataset: str | Path | None = None,
    *,
    out: str | Path | None = None,
    **settings: object,
) -> BudgetReport:
    """Where the quality goes from the reference to production, stage by stage, as `evalsuite budget` does;
    ``settings``: its options (``dim=128``, ``index="hnsw:ef=16"``, ``dtype="float16"``, ``endpoints=[URL]``,
    ``index_uri="faiss:PATH"``, ``attribution="shapley"``, ``budget_gates=["ndcg@10[stage=ann]:max_drop=0.01"]``,
    ``choose=...``, ``alternatives=[...]``, and the run's, as for :func:`evaluate`). ``out``: also write its files."""
    from ..budget.job import BUDGET_JOB_OPTIONS, run_budget_job

    args = namespace(BUDGET_JOB_OPTIONS, _given(_str(model), _str(dataset), settings), source="evalsuite.budget()")
    target = Path(out) if out is not None else None
    report, _ = run_budget_job(args, target)
    return report.write(target) if target is not None else report


def _str(value: str | Path | None) -> str | None:
    return None if value is None else str(value)
