"""The session plan of the pytest plugin: `evalsuite.toml` or `[tool.evalsuite]`, overridden by flags.

::

    # evalsuite.toml (keys of [tool.evalsuite] in pyproject.toml are the same)
    model_rev = "51ec9c19..."         # any `evalsuite run` setting: pooling, dtype, max_length, ...
    metrics = ["ndcg@10", "recall@100", "mrr@10"]
    gates = ["ndcg@10:max_drop=0.01"]  # defaults for every dataset
    inconclusive = "fail"             # or "xfail" / "skip": what an inconclusive gate does to the exit status
    multiplicity = "holm"             # or "none": correction of the significance-based gates, all together
    history = "history"               # the release history: one record per dataset per session (docs/history.md)

    [[datasets]]
    name = "minibeir"
    path = "bundled"                   # the dataset in the package; or a directory relative to this file
    baseline = "baselines/minibeir.json"
    gates = ["ndcg@10>=0.5", "mrr@10:no_significant_drop", "ndcg@10[topic=finance]:max_drop=0.02"]
    slice_by = ["topic"]               # metadata fields reported per slice (default: topic or domain if present)
    sweep = ["pooling=cls,mean"]       # optional: one item per sweep cell, gated against the base;
                                       # or a table: sweep = {pooling = ["cls", "mean"]}

    [rerank]                           # optional: a second stage, the local reference cross-encoder
    reranker = "models/ce"             # relative to this file; keys are --reranker* settings without the
    reranker_rev = "..."               # prefix: max_length, dtype, activation, template, truncation,
    depth = 100                        # batch_size (flags win)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import SpecError
from ..base.resources import BUNDLED, bundled_dataset_dir
from ..base.settings import check_keys
from ..rerank.run import RerankSpec, first_stage_spec
from ..run.spec import RunSpec
from ..sweep.axes import Axis, axes_from_spec, parse_vary
from .gates import Gate
from .kinds import parse_gates
from .verdicts import VerdictPolicy

# The spec file's session keys and each [[datasets]] entry's keys, with their types (base/settings.py checks them)
SESSION_KEYS: dict[str, Any] = {
    "baseline": str,
    "gates": list[str],
    "reference_model": str,
    "reference_rev": str,
    "reports_dir": str,
    "sweep": list[str] | dict,
    "grid": bool,
    "update_baseline": bool,
    "inconclusive": str,
    "multiplicity": str,
    "history": str,  # the release history directory (`history/`): a record per dataset, the history gates read it
    "history_anchor": str,  # the revision max_drop_from_first compares with (default: the first recorded release)
    "summary_md": str,  # the Markdown verdict summary (also appended to $GITHUB_STEP_SUMMARY when set)
}
DEFAULT_REPORTS_DIR = Path("reports") / "evalsuite"  # relative to the directory pytest runs in
RERANK_KEY = "rerank"  # the spec file's [rerank] table
DATASET_KEYS: dict[str, Any] = {
    "name": str,
    "path": str,
    "split": str,
    "qrels": str,
    "baseline": str,
    "gates": list[str],
    "sweep": list[str] | dict,
    "grid": bool,
    "metrics": list[str],
    "slice_by": list[str],
}


@dataclass(frozen=True)
class DatasetPlan:
    name: str
    spec: RunSpec
    baseline: Path | None
    gates: tuple[Gate, ...]
    sweep: tuple[Axis, ...] = ()
    grid: bool = False
    replaced_gates: tuple[Gate, ...] = ()  # the spec file's gates for this dataset that --gate replaced


@dataclass(frozen=True)
class SessionPlan:
    datasets: tuple[DatasetPlan, ...]
    update_baseline: bool
    reference_model: str | None
    reference_rev: str | None
    reports_dir: Path
    source: str
    verdicts: VerdictPolicy = field(default_factory=VerdictPolicy)
    rerank: RerankSpec | None = None  # the second stage every dataset's first stage is reranked by; None: none
    history: Path | None = None  # the release history directory; None: nothing recorded, no history gate
    history_anchor: str | None = None  # the pinned anchor revision of max_drop_from_first (a prefix is enough)
    summary_md: Path | None = None  # where the Markdown verdict summary goes

    @property
    def has_reference_run(self) -> bool:
        return self.reference_rev is not None or self.reference_model is not None


def _path(base: Path, value: object, where: str) -> Path:
    if not isinstance(value, str) or not value:
        raise SpecError(f"{where}: expected a path string, got {value!r}")
    p = Path(value).expanduser()
    return p if p.is_absolute() else (base / p)


def _dataset_path(base: Path, value: object, where: str) -> Path:
    """A dataset entry's path: ``bundled`` is the dataset inside the package, anything else a path."""
    return bundled_dataset_dir() if value == BUNDLED else _path(base, value, where)


def _list(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SpecError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(value)


def rerank_spec(table: Any, flags: Mapping[str, Any], base_dir: Path, src: str) -> RerankSpec | None:
    """The session's reranker: the spec file's ``[rerank]`` table overridden by the ``--reranker*`` and
    ``--rerank-depth`` flags (their option names, ``depths`` a tuple); None when neither names one."""
    if table is None and not flags:
        return None
    if table is not None and not isinstance(table, dict):
        raise SpecError(f"{src}: '{RERANK_KEY}' must be a table ([{RERANK_KEY}] with reranker = DIR)")
    settings = dict(table or {})
    if isinstance(settings.get("reranker"), str) and (base_dir / settings["reranker"]).exists():
        settings["reranker"] = str(base_dir / settings["reranker"])
    given = dict(flags)
    depths = given.pop("depths", None)
    if depths is not None:
        if len(depths) != 1:
            raise SpecError(
                f"--rerank-depth {','.join(map(str, depths))}: a gated session reranks at one depth; give one "
                "(`evalsuite rerank` compares several)"
            )
        given["depth"] = depths[0]
    settings.update(given)
    where = f"{src}: [{RERANK_KEY}]" if table is not None else "command line"
    spec = RerankSpec.from_mapping(settings, source=where)
    if not spec.reranker:
        raise SpecError(
            f"{where}: reranker settings ({', '.join(sorted(settings))}) without a reranker; pass --reranker DIR "
            f"(a cross-encoder directory or cached hub id) or set reranker in [{RERANK_KEY}]"
        )
    return spec


def build_plan(
    *,
    file_settings: Mapping[str, object] | None,
    file_path: Path | None,
    run_flags: Mapping[str, object],
    session_flags: Mapping[str, Any],
    cwd: Path,
    rerank_flags: Mapping[str, object] | None = None,
) -> SessionPlan:
    """Merge spec-file settings with command-line flags (flags win) into a validated plan."""
    raw = dict(file_settings or {})
    src = str(file_path) if file_path else "command line"
    base_dir = file_path.parent if file_path else cwd
    datasets_raw = raw.pop("datasets", None)
    rerank = rerank_spec(raw.pop(RERANK_KEY, None), rerank_flags or {}, base_dir, src)
    session_raw = {k: raw.pop(k) for k in SESSION_KEYS if k in raw}
    check_keys(session_raw, SESSION_KEYS, source=src)
    if "model" in raw and isinstance(raw["model"], str) and (base_dir / raw["model"]).exists():
        raw["model"] = str(base_dir / raw["model"])
    if "dataset" in raw:
        raw["dataset"] = str(_dataset_path(base_dir, raw["dataset"], f"{src}: dataset"))
    if "qrels" in raw:
        raw["qrels"] = str(_path(base_dir, raw["qrels"], f"{src}: qrels"))
    base = RunSpec.from_mapping({**raw, **{k: v for k, v in run_flags.items() if k != "dataset"}}, source=src)

    def session(key: str, default: Any = None) -> Any:
        return session_flags[key] if session_flags.get(key) is not None else session_raw.get(key, default)

    flag_gates = parse_gates(session_flags["gates"]) if session_flags.get("gates") else None
    top_gates = parse_gates(_list(session_raw["gates"], f"{src}: gates")) if "gates" in session_raw else ()
    top_sweep = session_raw.get("sweep")
    flag_sweep = tuple(parse_vary(session_flags["vary"])) if session_flags.get("vary") else None

    # each dataset entry with the directory its relative paths are resolved against
    entries: list[tuple[object, Path]]
    if run_flags.get("dataset"):
        entries = [({"path": str(_dataset_path(cwd, run_flags["dataset"], "--dataset"))}, cwd)]
    elif datasets_raw is not None:
        if not isinstance(datasets_raw, list) or not datasets_raw:
            raise SpecError(f"{src}: 'datasets' must be a non-empty array of tables ([[datasets]])")
        entries = [(entry, base_dir) for entry in datasets_raw]
    else:
        entries = [({"path": base.dataset or BUNDLED}, base_dir)]

    plans = []
    for i, (entry, entry_dir) in enumerate(entries):
        where = f"{src}: datasets[{i}]"
        if not isinstance(entry, dict):
            raise SpecError(f"{where}: expected a table")
        unknown = set(entry) - set(DATASET_KEYS)
        if unknown:
            raise SpecError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {', '.join(DATASET_KEYS)}")
        check_keys(entry, DATASET_KEYS, source=where)
        if "path" not in entry:
            raise SpecError(f"{where}: needs 'path'")
        path = str(_dataset_path(entry_dir, entry["path"], f"{where}.path"))
        changes: dict[str, object] = {"dataset": path}
        if "split" in entry:
            changes["split"] = entry["split"]
        if "qrels" in entry:  # relative to the spec file, as 'path' is
            changes["qrels"] = str(_path(entry_dir, entry["qrels"], f"{where}.qrels"))
        if "metrics" in entry:
            changes["metrics"] = RunSpec.from_mapping({"metrics": entry["metrics"]}, source=where).metrics
        if "slice_by" in entry:
            changes["slice_by"] = RunSpec.from_mapping({"slice_by": entry["slice_by"]}, source=where).slice_by
        for key in ("split", "qrels"):  # flags win over the spec file, as everywhere else
            if run_flags.get(key):
                changes[key] = run_flags[key]
        spec_gates = parse_gates(_list(entry["gates"], f"{where}.gates")) if "gates" in entry else top_gates
        gates = flag_gates if flag_gates is not None else spec_gates  # --gate replaces, never merges (said in notes)
        baseline: Path | None = None
        if session_flags.get("baseline"):
            if len(entries) > 1:
                raise SpecError(
                    "--baseline names one file but the spec has several datasets; "
                    "set 'baseline' per dataset in the spec file"
                )
            baseline = _path(cwd, session_flags["baseline"], "--baseline")
        elif "baseline" in entry:
            baseline = _path(base_dir, entry["baseline"], f"{where}.baseline")
        elif "baseline" in session_raw and len(entries) == 1:
            baseline = _path(base_dir, session_raw["baseline"], f"{src}: baseline")
        name = str(entry.get("name") or Path(path).resolve().name)
        raw_sweep = entry.get("sweep", top_sweep)
        sweep = (
            flag_sweep
            if flag_sweep is not None
            else (tuple(axes_from_spec(raw_sweep, source=f"{where}.sweep")) if raw_sweep else ())
        )
        grid = bool(session_flags.get("grid") or entry.get("grid", session_raw.get("grid", False)))
        spec = base.replace(**changes)
        if rerank is not None:  # the first stage retrieves at least as deep as the reranker reads
            spec = first_stage_spec(spec, [rerank.depth])
        replaced = tuple(g for g in spec_gates if g not in gates) if flag_gates is not None else ()
        plans.append(
            DatasetPlan(
                name=name, spec=spec, baseline=baseline, gates=gates, sweep=sweep, grid=grid, replaced_gates=replaced
            )
        )
    names = [p.name for p in plans]
    if len(set(names)) != len(names):
        raise SpecError(f"{src}: dataset names must be unique, got {names}")
    update = bool(session("update_baseline", False))
    if update and not any(p.baseline for p in plans):
        raise SpecError("--update-baseline needs a baseline path: pass --baseline FILE or set 'baseline'")
    ref_model, ref_rev = session("reference_model"), session("reference_rev")
    if (ref_model or ref_rev) and any(p.baseline for p in plans) and not update:
        raise SpecError(
            "both a baseline file and a reference run (--reference-rev/--reference-model) are set; "
            "compare against one of them"
        )
    if (
        isinstance(ref_model, str)
        and file_path
        and not session_flags.get("reference_model")
        and (base_dir / ref_model).exists()
    ):
        ref_model = str(base_dir / ref_model)
    reports = session("reports_dir")
    reports_dir = (
        _path(cwd if session_flags.get("reports_dir") else base_dir, reports, "reports_dir")
        if reports
        else cwd / DEFAULT_REPORTS_DIR
    )
    history, summary_md = (
        _path(cwd if session_flags.get(key) else base_dir, session(key), key) if session(key) else None
        for key in ("history", "summary_md")
    )
    verdicts = VerdictPolicy(
        inconclusive=session("inconclusive", VerdictPolicy.default("inconclusive")),
        multiplicity=session("multiplicity", VerdictPolicy.default("multiplicity")),
    )
    return SessionPlan(
        datasets=tuple(plans),
        update_baseline=update,
        reference_model=ref_model,
        reference_rev=ref_rev,
        reports_dir=reports_dir,
        source=src,
        verdicts=verdicts,
        rerank=rerank,
        history=history,
        history_anchor=str(session("history_anchor")) if session("history_anchor") else None,
        summary_md=summary_md,
    )
