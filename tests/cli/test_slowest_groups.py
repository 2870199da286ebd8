"""scripts/slowest_groups.py: `.ci/run`'s ten slowest groups, from a JUnit XML written by pytest itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_groups_sum_their_tests_and_print_slowest_first(pytester, tmp_path: Path) -> None:
    """Bugs: a group's time is its slowest test (not the sum), the order is fastest first, a class splits a module."""
    pytester.makepyfile(
        test_slow="import time\ndef test_a(): time.sleep(0.3)\ndef test_b(): time.sleep(0.3)\n",
        test_fast="import time\nclass TestX:\n    def test_c(self): time.sleep(0.4)\n",
    )
    junit = tmp_path / "junit.xml"
    pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--junitxml={junit}").assert_outcomes(passed=3)
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "slowest_groups.py"), str(junit)], capture_output=True, text=True
    ).stdout.splitlines()
    rows = [line.split() for line in out[1:]]
    assert [r[-1] for r in rows] == ["test_slow", "test_fast"]  # 0.6 s over 2 tests, then 0.4 s in one class
    assert [int(r[3]) for r in rows] == [2, 1]
    assert float(rows[0][0]) >= 0.6 > float(rows[1][0]) >= 0.4
