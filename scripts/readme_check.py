#!/usr/bin/env python3
"""Run the README's command blocks as pasted, from the repository root, and check every line's exit status.

    .venv/bin/python scripts/readme_check.py            # every ```bash block after "## Set up"'s own block
    .venv/bin/python scripts/readme_check.py --list     # print the script it would run

A line ending in a comment that says ``exit N`` must exit with N (a deliberate failure: a gate on a
regression, a canary against a broken server); every other line must exit 0. The blocks run in one bash
process, in order, so a block may use what an earlier one set (``REV``, background servers), with the
virtualenv active (the README says to activate it). The set-up block itself (bootstrap) is not re-run:
CI runs it. Exit status: 0 when every line did what the README says, 1 otherwise (the failing line, its
status and its output are printed).
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```bash\n(.*?)^```", re.M | re.S)
EXPECT = re.compile(r"#.*\bexit (\d)\b")


def blocks(readme: str) -> list[str]:
    """The bash blocks a reader runs after setting up (the set-up block is the first one)."""
    found = FENCE.findall(readme)
    return found[1:]


def lines_of(block: str) -> list[str]:
    return [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def script(readme: str) -> str:
    """One bash script: each README line, then a check of its exit status against what the README says."""
    out = ["set -u", "cd " + shlex.quote(str(ROOT)), "source .venv/bin/activate", "n=0"]
    for block in blocks(readme):
        for line in lines_of(block):
            want = EXPECT.search(line)
            expected = int(want.group(1)) if want else 0
            command = line.rstrip()
            if command.endswith("&"):  # a background server: started, nothing to check yet
                out.append(command)
                continue
            quoted = shlex.quote(line.strip())
            out += [
                "n=$((n+1))",
                f"echo {shlex.quote('$ ' + line.strip())}",
                "{ " + command + "\n} > /tmp/readme_check.out 2>&1; rc=$?",
                f'if [ "$rc" -ne {expected} ]; then echo "README line failed: exit $rc, expected {expected}: "{quoted};'
                " tail -40 /tmp/readme_check.out; kill $(jobs -p) 2>/dev/null; exit 1; fi",
                "tail -3 /tmp/readme_check.out",
            ]
    out += ['kill $(jobs -p) 2>/dev/null; echo "README: $n lines ran as written"']
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--readme", type=Path, default=ROOT / "README.md")
    p.add_argument("--list", action="store_true", help="print the script instead of running it")
    args = p.parse_args(argv)
    text = script(args.readme.read_text(encoding="utf-8"))
    if args.list:
        print(text, end="")
        return 0
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as fh:
        fh.write(text)
    return subprocess.run(["bash", fh.name], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
