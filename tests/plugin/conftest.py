from dataclasses import dataclass

import pytest


@pytest.fixture(scope="session", autouse=True)
def _model_stack(model_stack_loaded):
    """Every plugin test runs pytester in-process: load torch and ranx once, before the first run."""


class _KeepReport:
    """A plugin for an in-process pytester run: keeps the session's report object."""

    report = None

    def pytest_unconfigure(self, config):
        from evalsuite.pytest_plugin import REPORT

        self.report = config.stash.get(REPORT, None)


@dataclass
class Run:
    result: pytest.RunResult
    report: object  # evalsuite.gating.report.SessionReport, or None when no session ran


@pytest.fixture
def run_evalsuite(pytester):
    """Run pytest in-process; return its RunResult and the evalsuite SessionReport it produced."""

    def run(*args):
        keep = _KeepReport()
        result = pytester.runpytest(*args, plugins=[keep])
        return Run(result, keep.report)

    return run
