"""What a job declares: one :class:`Job` per subcommand of ``evalsuite``: a built-in one in its package's ``cli.py``,
listed in ``JOBS`` (`evalsuite/jobs.py`), or a plug-in's, named by an entry point of the group ``evalsuite.jobs``.
The command line builds its parser and dispatches by looping over both (``all_jobs()`` in `evalsuite/jobs.py`), and
the pytest plugin adds the options and items of the jobs that have a pytest part, by the same loop.

A job carries its name and help (``evalsuite --help``), its declared options (the ``Option`` declarations of its
package, in help order), its ``cmd_*`` (parsed arguments in, exit status out), the exit statuses that ``cmd_*``
returns with what each means (``evalsuite.cli.main`` refuses any other, and adds 2 for a usage or input error and
130 for an interrupt to every job), and where it has one, a loader of its pytest part (a
``evalsuite.gating.parts.PytestPart``: the options it adds to ``pytest``, and the part of the gated session its
request makes, with its items).

To add a job: one ``Job`` in its package's ``cli.py`` (its options declared once in the package's ``options.py``),
listed in ``JOBS``, and its test (its exit statuses through ``evalsuite.cli.main``). To add one from another
installed package: the same ``Job`` in that package, named by an entry point in its ``pyproject.toml``::

    [project.entry-points."evalsuite.jobs"]
    my-job = "my_package.cli:JOB"

It becomes ``evalsuite my-job`` exactly as a built-in job is (after them in ``evalsuite --help``); its name must be
no built-in job's and no other plug-in's (refused with a ``PluginError`` naming the entry point and its
distribution, never shadowed; `base/plugins.py`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .options import Option


@dataclass(frozen=True)
class Positional:
    """A job's one optional positional argument (``evalsuite history [DIR]``, ``evalsuite model-rev [PATH]``)."""

    name: str
    help: str


@dataclass(frozen=True)
class Job:
    """One subcommand: everything the command line and the pytest plugin need to know of it."""

    name: str
    help: str
    options: Callable[[], Sequence[Option]]  # a function: a plug-in's part of a help is read when the parser is built
    run: Callable[[argparse.Namespace], int]
    exit_codes: Mapping[int, str]  # every status ``run`` returns (2 and 130 are every job's, added by the CLI)
    positional: Positional | None = None
    pytest: Callable[[], object] | None = None  # loads its PytestPart (pytest imported only by the plugin)

    def __post_init__(self) -> None:
        if 0 not in self.exit_codes:
            raise ValueError(f"job {self.name}: exit_codes must say what 0 means")

    def status(self, code: int) -> int:
        """``code`` as the job's exit status; a status the job does not declare is a bug in the job."""
        if code not in self.exit_codes:
            raise RuntimeError(
                f"evalsuite {self.name} returned exit status {code}, which its Job does not declare "
                f"({sorted(self.exit_codes)}); declare it or return a declared one"
            )
        return code
