"""`evalsuite` command line: a thin loop over the declared jobs (`jobs.py` ``all_jobs()``: the built-in ones, then the
installed plug-ins'): one subcommand per ``Job``, dispatched to its ``cmd_*``. A job's own statuses are its
declaration's; every job exits 2 on a usage or input error (a plug-in job that fails to load among them) and 130 when
interrupted."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

from .base.errors import EvalsuiteError, PluginError
from .base.jobs import Job


def build_parser(read: tuple[tuple[Job, ...], PluginError | None] | None = None) -> argparse.ArgumentParser:
    """The parser of every job; ``read``: :func:`~evalsuite.jobs.jobs_or_error` when the caller has it already."""
    from .base.about import VersionAction
    from .jobs import add_job, jobs_or_error

    jobs, broken = read or jobs_or_error()  # a plug-in job that fails to load: the help still prints, saying so
    parser = argparse.ArgumentParser(
        prog="evalsuite",
        description="Retrieval-quality gates for embedding models.",
        epilog=f"a plug-in job failed to load: {broken}" if broken is not None else None,
    )
    parser.add_argument("--version", action=VersionAction, help="print the installed version and location, and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for job in jobs:
        add_job(sub, job)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from .jobs import jobs_or_error

    argv = list(sys.argv[1:] if argv is None else argv)
    read = jobs_or_error()
    broken = read[1]
    if broken is not None and not {"-h", "--help", "--version"} & set(argv):  # only the help prints
        print(f"evalsuite: error: {broken}", file=sys.stderr)
        return 2
    parser = build_parser(read)
    args = parser.parse_args(argv)
    try:
        job: Job = args.job
        return job.status(int(args.func(args)))
    except EvalsuiteError as exc:
        print(f"evalsuite: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file-system failure the preflight could not foresee (disk full, a race): one line
        path = exc.filename2 or exc.filename  # os.replace(tmp, target) names the target second
        where = f"{path}: " if path else ""
        print(f"evalsuite: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("evalsuite: interrupted", file=sys.stderr)
        return 130


def entry() -> NoReturn:
    """The ``evalsuite`` command (its console script and ``python -m evalsuite``): :func:`main`, then :func:`end`.
    In process (tests, the Python API) call :func:`main`, which returns the status."""
    end(main())


def end(status: int) -> NoReturn:
    """End the process with ``status`` once everything Python would run at exit has run, without the interpreter's
    teardown: the running non-daemon threads joined, the ``atexit`` handlers run (``weakref.finalize`` among them:
    a spool's files removed, an owned Ray pool closed), standard output and error flushed; then ``os._exit``. The
    teardown skipped is the freeing of every object and module at the C level (torch, transformers, faiss, numba),
    which measured 1.4 s of a 16.4 s cold sweep here (bench/bench_sweep.py, docs/benchmarks.md) and writes
    nothing."""
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe: nothing left to say there
            stream.flush()
    os._exit(status)


if __name__ == "__main__":  # pragma: no cover
    entry()
