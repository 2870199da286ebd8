"""The suite's servers start once per session because ``--dist loadgroup`` keeps an ``xdist_group`` on one
worker; pytest 9.2 with pytest-xdist 3.8 silently spreads a group (pyproject pins the test extra below 9.2,
and the root conftest fails such tests at set-up)."""

from __future__ import annotations

from pathlib import Path

import pytest

GROUPED = """
import os, pathlib, pytest

pytestmark = pytest.mark.xdist_group("servers")

@pytest.mark.parametrize("i", range(8))
def test_grouped(i):
    out = pathlib.Path(os.environ["WORKERS_DIR"]) / f"grouped-{i}"
    out.write_text(os.environ["PYTEST_XDIST_WORKER"])
"""
FREE = """
import pytest

@pytest.mark.parametrize("i", range(8))
def test_free(i):
    pass
"""


@pytest.mark.slow
def test_one_group_runs_on_one_worker(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    workers_dir = pytester.mkdir("workers")
    monkeypatch.setenv("WORKERS_DIR", str(workers_dir))
    pytester.makepyfile(test_grouped=GROUPED, test_free=FREE)
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=16)
    ran_on = {p.name: p.read_text() for p in Path(workers_dir).iterdir()}
    assert len(ran_on) == 8
    assert len(set(ran_on.values())) == 1, f"one xdist_group ran on several workers: {ran_on}"
