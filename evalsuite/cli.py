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


def build_parser() -> argparse.ArgumentParser:
    from .base.about import VersionAction
    from .jobs import JOBS, add_job, all_jobs

    try:
        jobs, broken = all_jobs(), None
    except PluginError as exc:  # the help still prints, saying so; main exits 2 naming it
        jobs, broken = JOBS, f"a plug-in job failed to load: {exc}"
    parser = argparse.ArgumentParser(
        prog="evalsuite", description="Retrieval-quality gates for embedding models.", epilog=broken
    )
    parser.add_argument("--version", action=VersionAction, help="print the installed version and location, and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for job in jobs:
        add_job(sub, job)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from .jobs import all_jobs

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        all_jobs()
    except PluginError as exc:  # a plug-in job failed to load: only the help prints (the built-ins', saying so)
        if not {"-h", "--help", "--version"} & set(argv):
            print(f"evalsuite: error: {exc}", file=sys.stderr)
            return 2
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
