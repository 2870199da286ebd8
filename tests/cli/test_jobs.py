"""The declared jobs (`evalsuite/jobs.py`): the command line and the pytest plugin are loops over ``all_jobs()``
(``JOBS``, then the installed plug-ins' jobs: those are tested in tests/plugins/test_plugins.py)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from evalsuite.base.jobs import Job, Positional
from evalsuite.base.options import Option
from evalsuite.cli import build_parser, main
from evalsuite.jobs import JOBS, add_job, pytest_parts

# `evalsuite --help` as it was before the jobs were declared: the order is part of the interface
COMMANDS = [
    "run", "model-rev", "sweep", "rerank-sweep", "canary", "rerank-canary", "load", "rerank", "late", "verify",
    "audit", "history", "budget",
]  # fmt: skip


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_the_parser_is_one_subcommand_per_job_in_help_order():
    """Bugs caught: a job left out of the loop, registered twice, or the order of `evalsuite --help` changed."""
    assert [job.name for job in JOBS] == COMMANDS
    sub = _subcommands(build_parser())
    assert list(sub.choices) == COMMANDS
    helps = {a.dest: a.help for a in sub._choices_actions}
    assert all(helps[job.name] == job.help for job in JOBS)
    for job in JOBS:  # every declared option is on its subcommand, under its declared destination
        flags = {s: a.dest for a in sub.choices[job.name]._actions for s in a.option_strings}
        assert {o.flag: flags.get(o.flag) for o in job.options()} == {o.flag: o.dest for o in job.options()}


def test_a_declared_job_is_parsed_and_dispatched_with_its_status(capsys):
    """Adding a job is one declaration: its positional, its options, its run, its statuses."""
    seen: list[argparse.Namespace] = []

    def run(args: argparse.Namespace) -> int:
        seen.append(args)
        return 1 if args.fail else 0

    job = Job(
        "demo",
        help="a demo job",
        options=lambda: (Option("--fail", "fail", {"action": "store_const", "const": True}),),
        run=run,
        exit_codes={0: "fine", 1: "failed"},
        positional=Positional("thing", "what"),
    )
    parser = argparse.ArgumentParser()
    add_job(parser.add_subparsers(dest="command"), job)
    args = parser.parse_args(["demo", "x", "--fail"])
    assert args.thing == "x" and args.job is job and job.status(args.func(args)) == 1
    assert job.status(run(parser.parse_args(["demo"]))) == 0 and seen[-1].thing is None


def test_a_status_a_job_does_not_declare_is_refused():
    """Bug caught: a job returning a status its declaration (and its docs) do not name."""
    job = Job("demo", help="", options=tuple, run=lambda a: 3, exit_codes={0: "fine"})
    with pytest.raises(RuntimeError, match="exit status 3, which its Job does not declare"):
        job.status(3)
    with pytest.raises(ValueError, match="what 0 means"):
        Job("bad", help="", options=tuple, run=lambda a: 0, exit_codes={1: "failed"})


def test_main_exits_with_the_jobs_status_and_2_on_a_usage_error(tmp_path, capsys):
    assert main(["model-rev", str(tmp_path / "missing")]) == 2
    assert "evalsuite: error:" in capsys.readouterr().err
    assert main(["history", str(tmp_path)]) == 0  # an empty history directory: said, exit 0
    assert "no release recorded" in capsys.readouterr().out


def test_the_plugin_adds_the_options_of_the_jobs_with_a_pytest_part(pytester):
    """The run's (the gated session's), the audit's and the budget's parts, in JOBS order; every option of each is
    one of pytest's (bug caught: a part left out of the plugin's loop)."""
    parts = pytest_parts()
    assert [job.name for job, _ in parts] == ["run", "audit", "budget"]
    assert [p.take is not None for _, p in parts] == [False, True, True]
    config = pytester.parseconfig()
    for _, part in parts:
        for o in part.options:
            assert config.getoption("evalsuite_" + o.dest) is None, o.flag


def test_the_job_registry_stays_cheap_to_import():
    code = (
        "import sys, evalsuite.jobs, evalsuite.cli; evalsuite.cli.build_parser(); "
        "heavy = [m for m in ('torch', 'faiss', 'transformers', 'numba', 'ranx', 'pytest') if m in sys.modules]; "
        "print(heavy); sys.exit(bool(heavy))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
