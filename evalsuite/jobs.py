"""The jobs: every subcommand of ``evalsuite`` as one :class:`~evalsuite.base.jobs.Job` declaration, in the order
``evalsuite --help`` lists them. `cli.py` builds its parser and dispatches by looping over ``JOBS``; the pytest plugin
adds the options and items of the jobs that declare a pytest part (:func:`pytest_parts`) by the same loop.

To add a job: one ``Job`` in its package's ``cli.py`` (name, help, options declared once, its ``cmd_*``, its exit
statuses, and its pytest part if it has one: a ``PytestPart`` beside its items, `gating/parts.py`), listed here; and
its test (exit statuses through ``evalsuite.cli.main``; its items through ``pytester``). Nothing else changes: the
parser, the dispatch, ``evalsuite --help`` and the plugin's options read this tuple. A plug-in package could add a
job through an entry point naming a ``Job`` (as it adds a store or a gate kind, `base/plugins.py`), read here beside
``JOBS``; no such group is read yet.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .api.cli import JOB as RUN
from .audit.cli import JOB as AUDIT
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


def add_job(subparsers: Any, job: Job) -> argparse.ArgumentParser:
    """The job's subcommand: its positional argument, its options, its ``cmd_*`` as ``func`` and itself as ``job``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(job.name, help=job.help)
    if job.positional is not None:
        parser.add_argument(job.positional.name, nargs="?", default=None, help=job.positional.help)
    add_options(parser.add_argument, job.options())
    parser.set_defaults(func=job.run, job=job)
    return parser


def pytest_parts() -> list[tuple[Job, PytestPart[Any]]]:
    """The jobs that declare a pytest part, with it, in ``JOBS`` order (pytest imported here, by the plugin only)."""
    from .gating.parts import PytestPart

    parts = []
    for job in JOBS:
        if job.pytest is not None:
            part = job.pytest()
            if not isinstance(part, PytestPart):
                raise TypeError(f"job {job.name}: its pytest loader returned {type(part).__name__}, not a PytestPart")
            parts.append((job, part))
    return parts
