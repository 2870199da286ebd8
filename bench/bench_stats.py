"""Benchmark: paired bootstrap and sign-flip test at release-gate scale.

    .venv/bin/python bench/bench_stats.py [--queries 7000] [--metrics 10] [--resamples 10000] [--repeat 5]
                                          [--json out.json]

Synthetic per-query scores of two sides (``ref`` uniform in [0, 1], ``cand = ref + N(0.002, 0.1)``)
shaped (queries, metrics). Timed, each ``--repeat`` times (fastest and median reported):

  (a) ``stats.paired_bootstrap``: ``--resamples`` resamples of all metrics at once (target: well under 1 s);
  (b) ``stats.sign_flip_test``: the same number of random sign vectors;
  (c) ``stats.compare``: both, plus the minimum detectable effect, as a gate would call it.

The figures depend on the machine and its load (wall time, fastest and median, and the process's CPU
time of the fastest-CPU run); the printout says how many CPUs numpy could use.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalsuite.scoring import stats

TARGET_SECONDS = 1.0


def timed(fn: Callable[[], object], repeat: int) -> dict[str, float]:
    fn()  # warm: first-touch allocations, BLAS thread start
    runs, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        runs.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {
        "fastest_s": round(min(runs), 4),
        "median_s": round(statistics.median(runs), 4),
        "cpu_s": round(min(cpu), 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=7000)
    ap.add_argument("--metrics", type=int, default=10)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    ref = rng.random((args.queries, args.metrics))
    cand = ref + rng.normal(0.002, 0.1, size=ref.shape)
    b = args.resamples
    timings = {
        "paired_bootstrap": timed(lambda: stats.paired_bootstrap(cand, ref, n_resamples=b), args.repeat),
        "sign_flip_test": timed(lambda: stats.sign_flip_test(cand, ref, n_resamples=b), args.repeat),
        "compare": timed(lambda: stats.compare(cand, ref, n_resamples=b), args.repeat),
    }
    head = stats.compare(cand[:, :1], ref[:, :1], n_resamples=b)[0]
    print(
        f"{args.queries} queries x {args.metrics} metrics, {b} resamples, {os.cpu_count()} CPUs, numpy {np.__version__}"
    )
    for name, f in timings.items():
        print(
            f"  {name:<17} fastest {f['fastest_s']:.3f} s   median {f['median_s']:.3f} s   "
            f"(CPU time {f['cpu_s']:.3f} s)"
        )
    ok = timings["paired_bootstrap"]["fastest_s"] < TARGET_SECONDS
    print(f"  bootstrap target < {TARGET_SECONDS:.1f} s: {'met' if ok else 'MISSED'}")
    c = head.ci
    print(
        f"  e.g. metric 0: delta {c.delta:+.4f}, 95% CI {c.low:+.4f} .. {c.high:+.4f}, "
        f"sign-flip p {head.p_value:.4f}, MDE {head.mde:.4f}"
    )
    figures = {
        "queries": args.queries,
        "metrics": args.metrics,
        "resamples": b,
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        **timings,
    }
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
