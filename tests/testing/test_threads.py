"""Each xdist worker runs its share of the cores (evalsuite/testing/threads.py): the variables its runtimes and the
servers it starts read, and the pools already loaded, limited."""

from __future__ import annotations

import json
import os

import pytest

from evalsuite.testing.threads import THREAD_VARIABLES, share_cores, threads_per_worker


@pytest.mark.parametrize(
    ("workers", "cores", "share"),
    [("2", 2, 1), ("2", 8, 4), ("3", 8, 2), ("4", 2, 1), ("1", 6, 6)],
)
def test_the_share_is_the_cores_over_the_workers_and_at_least_one(workers, cores, share):
    assert threads_per_worker({"PYTEST_XDIST_WORKER_COUNT": workers}, cores) == share


@pytest.mark.parametrize("count", [None, "", "0", "two", "-2"])
def test_outside_xdist_nothing_is_set(count):
    env = {} if count is None else {"PYTEST_XDIST_WORKER_COUNT": count}
    before = dict(env)
    assert share_cores(env, cores=2) is None
    assert env == before


def test_a_users_own_setting_wins():
    env = {"PYTEST_XDIST_WORKER_COUNT": "2", "OMP_NUM_THREADS": "3"}
    assert share_cores(env, cores=8) == 4
    assert env["OMP_NUM_THREADS"] == "3"
    assert env["MKL_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == "4"


WORKER_TEST = """
import json, os, subprocess, sys

def test_record(tmp_path_factory):
    import threadpoolctl, torch
    child = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('OMP_NUM_THREADS'))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    pools = {i["internal_api"]: i["num_threads"] for i in threadpoolctl.threadpool_info()}
    record = {"torch": torch.get_num_threads(), "child": child, "pools": pools}
    with open(os.environ["THREADS_OUT"] + "." + os.environ["PYTEST_XDIST_WORKER"], "w") as f:
        json.dump(record, f)
"""


@pytest.mark.parametrize("workers", [2])
def test_an_xdist_worker_its_runtimes_and_its_children_run_the_share(pytester, tmp_path, monkeypatch, workers):
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    monkeypatch.setenv("THREADS_OUT", str(tmp_path / "threads"))
    pytester.makeconftest("import os\nfrom evalsuite.testing.threads import share_cores\nshare_cores(os.environ)\n")
    pytester.makepyfile(test_worker=WORKER_TEST)
    result = pytester.runpytest_subprocess("-n", str(workers), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    [out] = tmp_path.glob("threads.gw*")
    record = json.loads(out.read_text())
    share = max(1, len(os.sched_getaffinity(0)) // workers)
    assert record["torch"] == share
    assert record["child"] == str(share)
    assert record["pools"], record  # numpy's BLAS (loaded by the evalsuite plugin before any conftest) and torch's
    assert set(record["pools"].values()) == {share}, record
