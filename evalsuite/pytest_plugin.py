"""pytest plugin: `pytest --model-rev <rev>` runs retrieval-quality gates as pytest items.

A thin shell over the declared jobs (`evalsuite/jobs.py`, the built-in ones and the installed plug-ins'): the options
of every job that has a pytest part are added by one loop; at configure, each part reads its request, one session object (`evalsuite.gating.session`) is
built by `evalsuite.gating.start` from the options and the spec file, and each requested part is attached to it;
its items (and its parts') are collected; the session's end is one report object whose lines the terminal summary
prints. Importing this module loads no torch, faiss, transformers or numba.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .base.errors import EvalsuiteError

if TYPE_CHECKING:
    from .datasets import Dataset
    from .encode.contract_encoder import ContractEncoder
    from .gating.report import SessionReport  # noqa: F401  (named by the StashKey below)
    from .gating.session import GateSession
    from .run.result import Result

SESSION = pytest.StashKey["GateSession | None"]()
REPORT = pytest.StashKey["SessionReport"]()
WRITE_ERROR = pytest.StashKey[str]()
SHARED = pytest.StashKey["Path | None"]()
WORKER_OUTPUT = "evalsuite"


def pytest_addoption(parser: pytest.Parser) -> None:
    from .base.options import add_options
    from .gating.start import PREFIX
    from .jobs import jobs_or_error, pytest_parts

    group = parser.getgroup("evalsuite", "evalsuite: retrieval-quality gates for embedding models")
    jobs, _ = jobs_or_error()  # a plug-in job that fails to load is a usage error at configure, naming it
    for _, part in pytest_parts(jobs):
        add_options(group.addoption, part.options, PREFIX)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    from .gating.start import PREFIX, start_session
    from .jobs import pytest_parts

    config.addinivalue_line("markers", "evalsuite: items collected by the evalsuite plugin")
    if _is_worker(config):
        workerinput: dict[str, Any] = config.workerinput  # type: ignore[attr-defined]
        shared, worker = (
            Path(workerinput["evalsuite_shared"]) if workerinput.get("evalsuite_shared") else None,
            str(workerinput.get("workerid", "worker")),
        )
    else:
        if getattr(config.option, "numprocesses", None):
            config.stash[SHARED] = Path(tempfile.mkdtemp(prefix="evalsuite-xdist-"))
        shared, worker = config.stash.get(SHARED, None), "main"
    try:
        requests = [
            (job.name, part, request)
            for job, part in pytest_parts()
            if (request := part.request(config.option, PREFIX)) is not None
        ]
        state = config.stash[SESSION] = start_session(
            config.option, config.invocation_params.dir, shared_dir=shared, worker=worker, requested=bool(requests)
        )
        if state is not None:
            for name, part, request in requests:
                state.attach(name, part.part(state, request))
    except EvalsuiteError as exc:
        raise pytest.UsageError(f"evalsuite: {exc}") from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    shared = node.config.stash.get(SHARED, None)
    node.workerinput["evalsuite_shared"] = str(shared) if shared else ""


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    session = node.config.stash.get(SESSION, None)
    output = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT)
    if session is not None and output:
        session.ledger.merge(output)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash.get(SESSION, None)
    if state is None:
        return
    from .gating.items import collect_items

    anchor = Path(state.plan.source) if state.plan.source != "command line" else config.rootpath
    new = collect_items(state, session, anchor)
    items.extend(new)
    # made after collection proper: report them as collected, so "collected N items" counts them too
    config.hook.pytest_collectreport(
        report=pytest.CollectReport("evalsuite", "passed", None, list[pytest.Item | pytest.Collector](new))
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = config.stash.get(SESSION, None)
    if state is None:
        return
    if _is_worker(config):
        config.workeroutput[WORKER_OUTPUT] = state.ledger.to_output()  # type: ignore[attr-defined]
        return
    from .gating.finish import session_report

    report = session_report(state)
    config.stash[REPORT] = report
    try:
        report.write()
    except OSError as exc:  # past the start-up check of --reports-dir (a race, a full disk): a line, not a traceback
        path = exc.filename2 or exc.filename or report.reports_dir  # os.replace(tmp, target) names the target second
        config.stash[WRITE_ERROR] = (
            f"evalsuite: error: {path}: {exc.strerror or exc}; not all reports were written; "
            "pass --reports-dir a directory you can write"
        )
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    except EvalsuiteError as exc:  # the release history could not take this session's record: said, not a traceback
        config.stash[WRITE_ERROR] = f"evalsuite: error: {exc}"
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    report = config.stash.get(REPORT, None)
    if report is None:
        return
    terminalreporter.write_sep("=", "evalsuite")
    for line in report.terminal_lines(verbose=config.option.verbose > 0):
        terminalreporter.write_line(line)
    if WRITE_ERROR in config.stash:
        terminalreporter.write_line(config.stash[WRITE_ERROR], red=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(SESSION, None)
    if state is not None:  # its parts too
        state.close()
    shared = config.stash.get(SHARED, None)
    if shared is not None and not _is_worker(config):
        shutil.rmtree(shared, ignore_errors=True)


# -- fixtures for users' own tests ------------------------------------------------------------------
@pytest.fixture(scope="session")
def evalsuite_session(request: pytest.FixtureRequest) -> GateSession:
    """The session's evalsuite state; with no evalsuite settings, the bundled model on the fixtures."""
    state = request.config.stash.get(SESSION, None)
    if state is None:
        from .gating.start import default_session

        try:
            state = default_session(request.config.invocation_params.dir)
        except EvalsuiteError as exc:
            pytest.fail(f"evalsuite: {exc}", pytrace=False)
        request.config.stash[SESSION] = state
    return state


@pytest.fixture(scope="session")
def evalsuite_result(evalsuite_session: GateSession) -> Result:
    """The candidate's Result on the first (or only) dataset, computed once per session."""
    return evalsuite_session.result(evalsuite_session.datasets[0].name)


@pytest.fixture(scope="session")
def evalsuite_dataset(evalsuite_session: GateSession) -> Dataset:
    """The first (or only) dataset: corpus, queries and qrels."""
    return evalsuite_session.prepared[evalsuite_session.datasets[0].name].dataset


@pytest.fixture(scope="session")
def evalsuite_encoder(evalsuite_session: GateSession) -> ContractEncoder:
    """A ContractEncoder: ``embed_queries``, ``embed_documents`` and ``similarity(query, doc)``."""
    from .encode.contract_encoder import ContractEncoder

    prepared = evalsuite_session.prepared[evalsuite_session.datasets[0].name]
    return ContractEncoder(evalsuite_session.encoder(prepared), prepared.contract)
