"""The ten slowest groups of a test run, from its JUnit XML: `python scripts/slowest_groups.py junit.xml [N]`.

A group is a test module (JUnit's ``classname`` up to the module, ``tests.canary.test_infinity``); its time is the
sum of its tests' times, set-up included as pytest reports it (a session server's start lands on the first test that
asks for it). Printed slowest first, with the share of the whole run, so `.ci/run`'s log says where the time goes.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def module_of(classname: str) -> str:
    """``tests.canary.test_infinity.TestX`` -> ``tests.canary.test_infinity`` (a class inside a module folds in)."""
    parts = classname.split(".")
    for i, part in enumerate(parts):
        if part.startswith("test_") or part.endswith("_test"):
            return ".".join(parts[: i + 1])
    return classname


def slowest(path: Path, n: int = 10) -> list[tuple[str, float, int]]:
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for case in ET.parse(path).getroot().iter("testcase"):
        group = module_of(case.get("classname", "?"))
        totals[group] += float(case.get("time", "0") or 0)
        counts[group] += 1
    return sorted(((g, t, counts[g]) for g, t in totals.items()), key=lambda x: -x[1])[:n]


def main(argv: list[str]) -> int:
    if not argv or not Path(argv[0]).is_file():
        print("usage: python scripts/slowest_groups.py JUNIT_XML [N]", file=sys.stderr)
        return 2
    rows = slowest(Path(argv[0]), int(argv[1]) if len(argv) > 1 else 10)
    total = sum(t for _, t, _ in slowest(Path(argv[0]), 10**9)) or 1.0
    print(f"slowest test groups (of {total:.0f} s of test time):")
    for group, seconds, count in rows:
        print(f"  {seconds:8.1f} s  {100 * seconds / total:5.1f}%  {count:4d} tests  {group}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
