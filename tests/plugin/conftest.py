import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

BASE = ["-p", "no:randomly", "-p", "no:cacheprovider"]


@functools.cache
def _revision(model_dir: str) -> str:
    from evalsuite.model import directory_digest

    return directory_digest(Path(model_dir))


def plugin_args(model_dir: object, dataset: object, *extra: str, no_cache: bool = True) -> list[str]:
    """A gated pytester session's arguments: the model pinned to its own digest, the dataset, on the CPU."""
    model = str(model_dir)
    pinned = ["--model", model, "--model-rev", _revision(model), "--dataset", str(dataset)]
    return [*BASE, *pinned, *(["--no-cache"] if no_cache else []), "--device", "cpu", *extra]


@pytest.fixture
def tiny(tiny_model_dir):
    return str(tiny_model_dir), _revision(str(tiny_model_dir))


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
