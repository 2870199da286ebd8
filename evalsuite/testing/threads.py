"""Threads per test worker: the cores shared out among pytest-xdist's workers and the servers they start.

Each xdist worker, and every engine server or ``evalsuite`` subprocess it starts, would otherwise run as many
OpenMP/MKL/OpenBLAS threads as the machine has cores. With two workers on two cores, plus the servers, that is
several times more threads than cores, and the runtimes' idle threads spin-wait on cores the other processes
need. Measured here on 2 cores (2026-12-06, ``-n 2 --dist loadgroup``): the Infinity canary and diagnosis tests
beside the sweep and gate tests took 251 s with the default threads and 140 s with one thread per worker; the
Infinity fleet, release-history and gate tests 222 s against 119 s.

The variables are set only where they are not set already (a user's own ``OMP_NUM_THREADS`` wins), and only
under xdist: a single-process run keeps every core. A thread pool already loaded when the share is made (numpy's
OpenBLAS, imported by the pytest plugin before any conftest) is limited through threadpoolctl.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def threads_per_worker(environ: Mapping[str, str], cores: int) -> int | None:
    """``cores // workers`` (at least 1) under pytest-xdist (``PYTEST_XDIST_WORKER_COUNT``), else ``None``."""
    count = environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not count.isdigit() or int(count) < 1:
        return None
    return max(1, cores // int(count))


def share_cores(environ: MutableMapping[str, str], cores: int | None = None) -> int | None:
    """Set :data:`THREAD_VARIABLES` in ``environ`` to :func:`threads_per_worker` where unset, and limit the
    thread pools this process has loaded already to ``OMP_NUM_THREADS``; the share, or ``None`` outside xdist.
    Call it before torch or faiss is imported: their runtimes read the variables once, when loaded (the servers
    and subprocesses the worker starts inherit them)."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = threads_per_worker(environ, cores)
    if threads is None:
        return None
    for name in THREAD_VARIABLES:
        environ.setdefault(name, str(threads))
    from threadpoolctl import threadpool_limits

    given = environ["OMP_NUM_THREADS"]
    threadpool_limits(limits=int(given) if given.isdigit() else threads)  # the pools loaded already, for good
    return threads
