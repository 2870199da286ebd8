"""Session fixtures held by ``Lifetimes`` end where the tests that need them end (a pytester session, one process and
two xdist workers): stopped when the next test is in another group and does not ask for them, kept across groups
that all ask, set up again for a later group, and what is built on them is torn down with them."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = """
import os, pathlib, pytest
from evalsuite.testing.lifetimes import Lifetimes

LIFETIMES = Lifetimes()
LOG = pathlib.Path(os.environ["LIFETIMES_LOG"])

def log(line):
    with LOG.open("a") as fh:
        fh.write(line + "\\n")

@pytest.fixture(scope="session")
def server(request):
    LIFETIMES.hold(request)
    log("start")
    yield "url"
    log("stop")

@pytest.fixture(scope="session")
def built_on_it(server):
    log("built")
    yield server
    log("unbuilt")

@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item, nextitem):
    result = yield
    LIFETIMES.after(item, nextitem)
    return result
"""
TESTS = """
import pytest
from conftest import log

@pytest.mark.xdist_group("a")
def test_a1(built_on_it): log("a1")

@pytest.mark.xdist_group("a")
def test_a2(): log("a2")

@pytest.mark.xdist_group("b")
def test_b1(server): log("b1")

def test_free(): log("free")

@pytest.mark.xdist_group("c")
def test_c1(built_on_it): log("c1")
"""


def _logged_run(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> list[str]:
    """The five tests above run in a subprocess with ``args``, all passing; the fixtures' log, line by line."""
    log = tmp_path / "log"
    monkeypatch.setenv("LIFETIMES_LOG", str(log))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_order=TESTS)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", *args).assert_outcomes(passed=5)
    return log.read_text().split()


def test_a_held_fixture_ends_with_its_group_and_comes_back_for_a_later_one(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _logged_run(pytester, tmp_path, monkeypatch, "-p", "no:xdist")
    # a -> b: b asks for the server, kept (what is built on it only ends with it); b -> free: ended; c: again
    assert lines == [
        *("start", "built", "a1", "a2", "b1", "unbuilt", "stop", "free"),
        *("start", "built", "c1", "unbuilt", "stop"),
    ]


def test_under_loadgroup_each_worker_ends_its_own(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _logged_run(pytester, tmp_path, monkeypatch, "-n", "2", "--dist", "loadgroup")
    # every start is stopped, every test that asked found its server up, nothing started twice without a stop between
    assert lines.count("start") == lines.count("stop") >= 1
    up = 0
    for line in lines:
        up += {"start": 1, "stop": -1}.get(line, 0)
        assert 0 <= up <= 2  # at most one per worker
