"""The jobs: every subcommand of ``evalsuite`` as one :class:`~evalsuite.base.jobs.Job` declaration, in the order
``evalsuite --help`` lists them: the built-in ones in ``JOBS``, then each installed plug-in's (:func:`all_jobs`).
`cli.py` builds its parser and dispatches by looping over :func:`all_jobs`; the pytest plugin adds the options and
items of the jobs that declare a pytest part (:func:`pytest_parts`) by the same loop. Nothing else reads ``JOBS``.

To add a job: one ``Job`` in its package's ``cli.py`` (name, help, options declared once, its ``cmd_*``, its exit
statuses, and its pytest part if it has one: a ``PytestPart`` beside its items, `gating/parts.py`), listed in
``JOBS``; and its test (exit statuses through ``evalsuite.cli.main``; its items through ``pytester``). Nothing else
changes: the parser, the dispatch, ``evalsuite --help`` and the plugin's options loop over :func:`all_jobs`.

To add a job from another installed package: the same ``Job``, named by an entry point of the group
``evalsuite.jobs`` in that package's ``pyproject.toml`` (``[project.entry-points."evalsuite.jobs"]``,
``my-job = "my_package.cli:JOB"``; `base/plugins.py`). It is read when the parser is built (never at ``import
evalsuite``), listed after the built-in jobs, parsed, dispatched and held to its declared exit statuses as they are.
An entry point that cannot be loaded, names something other than a ``Job`` or takes a job's name (a built-in's or
another plug-in's: refused, never shadowed) is a ``PluginError`` naming it and its distribution: ``evalsuite --help``
still prints (saying so), every job exits 2 naming it, and a pytest session is a usage error naming it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .api.cli import JOB as RUN
from .audit.cli import JOB as AUDIT
from .base import plugins
from .base.errors import PluginError
from .base.jobs import Job
from .base.options import add_options
from .budget.cli import JOB as BUDGET
from .canary.cli import JOB as CANARY
from .canary.reranker.cli import JOB as RERANK_CANARY
from .history.cli import JOB as HISTORY
from .late.cli import JOB as LATE
from .load.cli import JOB as LOAD
from .model.cli import JOB as MODEL_REV
from .rerank.cli import JOB as RERANK
from .sweep.cli import JOB as SWEEP
from .sweep.cli import RERANK_SWEEP_JOB as RERANK_SWEEP
from .verify.cli import JOB as VERIFY

if TYPE_CHECKING:
    from .gating.parts import PytestPart

JOBS: tuple[Job, ...] = (
    RUN,
    MODEL_REV,
    SWEEP,
    RERANK_SWEEP,
    CANARY,
    RERANK_CANARY,
    LOAD,
    RERANK,
    LATE,
    VERIFY,
    AUDIT,
    HISTORY,
    BUDGET,
)


def all_jobs() -> tuple[Job, ...]:
    """``JOBS``, then every installed plug-in's ``Job`` (group ``evalsuite.jobs``), read once per process: the jobs
    the command line and the pytest plugin loop over. PluginError naming the entry point and its distribution when
    one cannot be loaded, names no ``Job``, or takes a built-in job's name or another plug-in's."""
    return JOBS + plugins.cached(plugins.JOBS, Job, tuple(job.name for job in JOBS))


def jobs_or_error() -> tuple[tuple[Job, ...], PluginError | None]:
    """:func:`all_jobs` and no error, or, where a plug-in job cannot be loaded, the built-in ``JOBS`` and that
    ``PluginError``: what ``evalsuite --help`` and pytest's options show while every run reports the error."""
    try:
        return all_jobs(), None
    except PluginError as exc:
        return JOBS, exc


def add_job(subparsers: Any, job: Job) -> argparse.ArgumentParser:
    """The job's subcommand: its positional argument, its options, its ``cmd_*`` as ``func`` and itself as ``job``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(job.name, help=job.help)
    if job.positional is not None:
        parser.add_argument(job.positional.name, nargs="?", default=None, help=job.positional.help)
    add_options(parser.add_argument, job.options())
    parser.set_defaults(func=job.run, job=job)
    return parser


def pytest_parts(jobs: Iterable[Job] | None = None) -> list[tuple[Job, PytestPart[Any]]]:
    """The jobs (:func:`all_jobs` unless given) that declare a pytest part, with it, in their order (pytest imported
    here, by the plugin only)."""
    from .gating.parts import PytestPart

    parts = []
    for job in all_jobs() if jobs is None else jobs:
        if job.pytest is not None:
            part = job.pytest()
            if not isinstance(part, PytestPart):
                raise TypeError(f"job {job.name}: its pytest loader returned {type(part).__name__}, not a PytestPart")
            parts.append((job, part))
    return parts
