"""pytest plugin: `pytest --model-rev <rev>` runs retrieval-quality gates as pytest items.

Thin by design: options come from `evalsuite.options`, settings from `evalsuite.specfile`, state
and computation from `evalsuite.gate_session`, items from `evalsuite.pytest_items`. Importing
this module loads no torch, faiss, transformers or numba.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from .errors import EvalsuiteError
from .options import PYTEST_OPTIONS, RUN_OPTIONS, add_options, collect

PREFIX = "evalsuite_"
STATE = pytest.StashKey["Any"]()
SHARED = pytest.StashKey["Path | None"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalsuite", "evalsuite: retrieval-quality gates for embedding models")
    add_options(group.addoption, RUN_OPTIONS, PREFIX)
    add_options(group.addoption, PYTEST_OPTIONS, PREFIX)
    add_options(group.addoption, _sweep_options(), PREFIX)
    add_options(group.addoption, _canary_options(), PREFIX)


def _sweep_options() -> tuple:
    from .sweep.options import SWEEP_PYTEST_OPTIONS

    return SWEEP_PYTEST_OPTIONS


def _canary_options() -> tuple:
    from .canary.options import CANARY_OPTIONS

    return CANARY_OPTIONS


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _build_state(config: pytest.Config) -> Any:
    from .gate_session import GateSession
    from .specfile import build_plan, find_spec_file

    run_flags = collect(config.option, RUN_OPTIONS, PREFIX)
    session_flags = collect(config.option, PYTEST_OPTIONS + _sweep_options(), PREFIX)
    found = find_spec_file(config.invocation_params.dir, session_flags.pop("spec", None))
    canary_flags = collect(config.option, _canary_options(), PREFIX)
    if not run_flags and not session_flags and not canary_flags and found is None:
        return None
    plan = build_plan(file_settings=found[1] if found else None, file_path=found[0] if found else None,
                      run_flags=run_flags, session_flags=session_flags, cwd=config.invocation_params.dir)
    shared = Path(config.workerinput["evalsuite_shared"]) if _is_worker(config) and \
        config.workerinput.get("evalsuite_shared") else config.stash.get(SHARED, None)
    canary = None
    if canary_flags:
        from .canary.checks import CanarySettings

        canary = CanarySettings.from_values(canary_flags)
        canary.api_key()  # a configured but unset key variable is an error now, not mid-session
    state = GateSession(plan, shared, canary=canary)
    if _is_worker(config):
        state.worker = config.workerinput.get("workerid", "worker")
    state.prepare_all()
    return state


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "evalsuite: items collected by the evalsuite plugin")
    if not _is_worker(config) and getattr(config.option, "numprocesses", None):
        config.stash[SHARED] = Path(tempfile.mkdtemp(prefix="evalsuite-xdist-"))
    try:
        config.stash[STATE] = _build_state(config)
    except EvalsuiteError as exc:
        raise pytest.UsageError(f"evalsuite: {exc}") from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    shared = node.config.stash.get(SHARED, None)
    node.workerinput["evalsuite_shared"] = str(shared) if shared else ""


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    state = node.config.stash.get(STATE, None)
    data = getattr(node, "workeroutput", {}).get("evalsuite")
    if state is not None and data:
        state.merge(data)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    from .pytest_items import CanaryItem, ContractItem, DatasetCollector, GateItem, IntegrityItem, SweepCellItem

    anchor = Path(state.plan.source) if state.plan.source != "command line" else config.rootpath
    root = DatasetCollector.from_parent(session, name="evalsuite", path=anchor, nodeid="evalsuite")
    for dp in state.datasets:
        parent = DatasetCollector.from_parent(root, name=dp.name)
        new: list[pytest.Item] = [
            ContractItem.from_parent(parent, name="contract", state=state, dataset=dp.name),
            IntegrityItem.from_parent(parent, name="integrity", state=state, dataset=dp.name),
        ]
        new += [GateItem.from_parent(parent, name=f"gate[{g.expr}]", state=state, dataset=dp.name, gate=g)
                for g in state.gates[dp.name]]
        new += [SweepCellItem.from_parent(parent, name=f"sweep[{cell.name}]", state=state, dataset=dp.name,
                                          cell=cell.name, gates=state.sweep_gates[dp.name])
                for cell in state.sweep_cells(dp.name)]
        new += [CanaryItem.from_parent(parent, name=f"canary[{check}]", state=state, dataset=dp.name, check=check)
                for check in state.canary_checks(dp.name)]
        for item in new:
            item.add_marker("evalsuite")
        items.extend(new)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = config.stash.get(STATE, None)
    if state is None:
        return
    if _is_worker(config):
        config.workeroutput["evalsuite"] = state.to_output()
        return
    from .reports.gate_reports import write_gate_reports
    from .reports.sweep_reports import write_sweep_reports

    for dp in state.datasets:
        sweep = state.computed(f"sweep-{dp.name}")
        if sweep is not None:
            write_sweep_reports(sweep, state.plan.reports_dir / dp.name / "sweep")
        result = state.computed(f"candidate-{dp.name}")
        if result is not None:
            outcomes = [o for o in state.outcomes if o["dataset"] == dp.name]
            summary = state.summaries.get(dp.name, {"metrics": result.metrics})
            write_gate_reports(result, state.plan.reports_dir / dp.name, summary, outcomes, state.notes)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or _is_worker(config):
        return
    from .reports.gate_reports import format_rows, summary_rows

    tr = terminalreporter
    tr.write_sep("=", "evalsuite")
    for note in state.notes:
        tr.write_line(note)
    for v in state.canary_verdicts:
        tr.write_line(f"canary {v['dataset']}: {v['status']} {v['message'].splitlines()[0]}")
    for line in state.computations:
        tr.write_line(f"computed {line}")
    for line in state.baselines_written:
        tr.write_line(f"baseline written: {line} (gates skipped)")
    for dp in state.datasets:
        summary = state.summaries.get(dp.name)
        if not summary or "metrics" not in summary:
            continue
        label = (summary.get("label") or "baseline").split()[0]
        outcomes = [o for o in state.outcomes if o["dataset"] == dp.name]
        tr.write_line(f"{dp.name}:")
        for line in format_rows(("metric", label, "candidate", "delta", "verdict"), summary_rows(summary, outcomes)):
            tr.write_line("  " + line)
    tr.write_line(f"reports: {state.plan.reports_dir}")


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None:
        state.close()
    shared = config.stash.get(SHARED, None)
    if shared is not None and not _is_worker(config):
        shutil.rmtree(shared, ignore_errors=True)


# -- fixtures for users' own tests ------------------------------------------------------------------
@pytest.fixture(scope="session")
def evalsuite_session(request: pytest.FixtureRequest) -> Any:
    """The session's evalsuite state; with no evalsuite settings, the bundled model on the fixtures."""
    state = request.config.stash.get(STATE, None)
    if state is None:
        from .gate_session import GateSession
        from .specfile import build_plan

        try:
            state = GateSession(build_plan(file_settings=None, file_path=None, run_flags={}, session_flags={},
                                           cwd=request.config.invocation_params.dir))
            state.prepare_all()
        except EvalsuiteError as exc:
            pytest.fail(f"evalsuite: {exc}", pytrace=False)
        request.config.stash[STATE] = state
    return state


@pytest.fixture(scope="session")
def evalsuite_result(evalsuite_session: Any) -> Any:
    """The candidate's Result on the first (or only) dataset, computed once per session."""
    return evalsuite_session.result(evalsuite_session.datasets[0].name)


@pytest.fixture(scope="session")
def evalsuite_dataset(evalsuite_session: Any) -> Any:
    """The first (or only) dataset: corpus, queries and qrels."""
    return evalsuite_session.prepared[evalsuite_session.datasets[0].name].dataset


@pytest.fixture(scope="session")
def evalsuite_encoder(evalsuite_session: Any) -> Any:
    """A ContractEncoder: ``embed_queries``, ``embed_documents`` and ``similarity(query, doc)``."""
    from .reference import ContractEncoder

    prepared = evalsuite_session.prepared[evalsuite_session.datasets[0].name]
    return ContractEncoder(evalsuite_session.encoder(prepared), prepared.contract)
