"""The README is the landing page: short, its links resolve, and every evalsuite command in it parses.

(`scripts/readme_check.py` runs its blocks for real; this is the cheap check every CI run makes.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from evalsuite.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```bash\n(.*?)^```", README, re.M | re.S)


def _commands() -> list[list[str]]:
    out = []
    for block in BLOCKS:
        for line in block.splitlines():
            line = line.split(" #", 1)[0].strip()
            inner = re.findall(r"\$\(([^)]*)\)", line)  # REV=$(evalsuite model-rev): the command inside
            for part in [*re.split(r"&&|;", re.sub(r"\$\([^)]*\)", "X", line)), *inner]:
                words = shlex.split(part, posix=True)
                if words and words[0] == "evalsuite":
                    out.append([w.replace("$", "") for w in words[1:]])
    return out


def test_the_readme_is_a_landing_page_with_working_links() -> None:
    assert len(README.splitlines()) <= 300
    links = re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)(?:#[\w-]+)?\)", README)
    assert len({link for link in links if link.startswith("docs/")}) >= 4
    missing = [link for link in links if not (ROOT / link).is_file()]
    assert not missing, missing


@pytest.mark.parametrize("argv", _commands(), ids=lambda a: " ".join(a[:3]))
def test_every_evalsuite_command_in_the_readme_parses(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert callable(args.func)


def test_the_readme_has_the_three_jobs_and_the_two_setup_commands() -> None:
    assert BLOCKS[0].splitlines() == [
        "bash scripts/bootstrap.sh && .venv/bin/evalsuite run",
        "bash scripts/bootstrap.sh --test && .venv/bin/python -m pytest -n 2 --dist loadgroup",
    ]
    assert {c[0] for c in _commands()} >= {"model-rev", "canary", "sweep"}
