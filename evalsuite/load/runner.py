"""Run a load plan: for each (batch size, concurrency) level, the same seeded requests go to every
target in interleaved slices (A B B A ...), so machine noise during the level hits every target alike.

Each level keeps ``concurrency`` requests in flight per target (closed loop: a worker sends its next
request when the last one answers) for a request count or a duration, and records one
:class:`~evalsuite.load.summary.Sample` per request.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import SpecError
from .summary import Figures, Sample, figures
from .targets import Target
from .workload import Draw, Workload, bucket_names, draw_requests

DEFAULT_CONCURRENCY = (1, 4, 16, 64)
DEFAULT_BATCH_SIZES = (32,)
DEFAULT_REQUESTS = 64


@dataclass(frozen=True)
class LoadPlan:
    """Levels and how long each runs: ``requests`` per target per level, or ``duration`` seconds."""

    concurrency: tuple[int, ...] = DEFAULT_CONCURRENCY
    batch_sizes: tuple[int, ...] = DEFAULT_BATCH_SIZES
    requests: int | None = DEFAULT_REQUESTS
    duration: float | None = None
    rounds: int = 2
    warmup: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.concurrency or any(c < 1 for c in self.concurrency):
            raise SpecError(f"load concurrency levels must be integers >= 1, got {list(self.concurrency)}")
        if not self.batch_sizes or any(b < 1 for b in self.batch_sizes):
            raise SpecError(f"load batch sizes must be integers >= 1, got {list(self.batch_sizes)}")
        if (self.requests is None) == (self.duration is None):
            raise SpecError("give the load per level as a request count or as a duration, not both or neither")
        if self.requests is not None and self.requests < 1:
            raise SpecError(f"load requests per level must be >= 1, got {self.requests}")
        if self.duration is not None and not self.duration > 0:
            raise SpecError(f"load duration per level must be > 0 seconds, got {self.duration}")
        if self.rounds < 1 or self.warmup < 0:
            raise SpecError(f"load rounds must be >= 1 and warmup >= 0, got {self.rounds} and {self.warmup}")

    def levels(self) -> list[tuple[int, int]]:
        """(batch size, concurrency) in run order: each batch size over increasing concurrency."""
        return [(b, c) for b in self.batch_sizes for c in sorted(set(self.concurrency))]

    def to_dict(self) -> dict[str, Any]:
        return {
            "concurrency": list(self.concurrency),
            "batch_sizes": list(self.batch_sizes),
            "requests": self.requests,
            "duration": self.duration,
            "rounds": self.rounds,
            "warmup": self.warmup,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Level:
    """One target at one (batch size, concurrency): its figures overall and per length bucket."""

    target: str
    batch_size: int
    concurrency: int
    figures: Figures
    buckets: dict[str, Figures]
    first_errors: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "batch_size": self.batch_size,
            "concurrency": self.concurrency,
            **self.figures.to_dict(),
            "buckets": {k: v.to_dict() for k, v in self.buckets.items()},
            "first_errors": list(self.first_errors),
        }


@dataclass(frozen=True)
class LoadProfile:
    """Every level of every target, in run order, and the workload they drew from."""

    targets: tuple[str, ...]
    plan: LoadPlan
    workload: dict[str, Any]
    levels: tuple[Level, ...] = field(default=())

    def level(self, target: str, batch_size: int, concurrency: int) -> Level:
        for lv in self.levels:
            if (lv.target, lv.batch_size, lv.concurrency) == (target, batch_size, concurrency):
                return lv
        raise SpecError(f"no load level for {target!r} at batch size {batch_size}, concurrency {concurrency}")

    def of(self, target: str) -> list[Level]:
        return [lv for lv in self.levels if lv.target == target]

    def to_dict(self) -> dict[str, Any]:
        return {
            "targets": list(self.targets),
            "plan": self.plan.to_dict(),
            "workload": self.workload,
            "levels": [lv.to_dict() for lv in self.levels],
        }


def _slice(
    target: Target,
    draws: Sequence[Draw],
    workload: Workload,
    concurrency: int,
    batch_size: int,
    deadline: float | None,
    tick: Callable[[], None],
) -> tuple[list[Sample], float]:
    """Send ``draws`` (cycled until ``deadline`` when one is given) with ``concurrency`` in flight."""
    source = itertools.cycle(draws) if deadline is not None else iter(draws)
    lock = threading.Lock()
    samples: list[Sample] = []
    crashed: list[BaseException] = []

    def worker() -> None:
        while True:
            with lock:
                if crashed or (deadline is not None and time.perf_counter() >= deadline):
                    return
                draw = next(source, None)
            if draw is None:
                return
            texts = [workload.texts[i] for i in draw.indices]
            t0 = time.perf_counter()
            try:
                status, detail = target.send(texts)
            except BaseException as exc:  # a bug, not a failed request: stop the slice, re-raise below
                with lock:
                    crashed.append(exc)
                return
            seconds = time.perf_counter() - t0
            sample = Sample(
                target.name,
                concurrency,
                batch_size,
                draw.bucket,
                len(texts),
                sum(workload.processed_tokens(i) for i in draw.indices),
                seconds,
                status,
                detail,
            )
            with lock:
                samples.append(sample)
            tick()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, name=f"load-{target.name}-{i}", daemon=True) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if crashed:
        raise crashed[0]
    return samples, time.perf_counter() - t0


def _split(draws: list[Draw], parts: int) -> list[list[Draw]]:
    size, extra = divmod(len(draws), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(draws[start:end])
        start = end
    return out


def run_load(
    targets: Sequence[Target],
    workload: Workload,
    plan: LoadPlan,
    *,
    progress: bool = False,
    on_level: Callable[[Level], None] | None = None,
) -> LoadProfile:
    """Profile every target over every level of ``plan``; the targets get identical requests."""
    from tqdm.auto import tqdm

    names = [t.name for t in targets]
    if not targets or len(set(names)) != len(names):
        raise SpecError(f"load targets need distinct names, got {names}")
    levels = plan.levels()
    per_level = plan.requests if plan.requests is not None else None
    total = per_level * len(levels) * len(targets) if per_level is not None else None
    bar = tqdm(total=total, desc="load", unit="req", disable=not progress, leave=False)
    bar_lock = threading.Lock()

    def tick() -> None:
        with bar_lock:
            bar.update(1)

    for t in targets:  # warm connections and lazy model loads; not recorded
        for d in draw_requests(workload, plan.batch_sizes[0], plan.warmup, plan.seed - 1):
            t.send([workload.texts[i] for i in d.indices])
    out: list[Level] = []
    try:
        for n_level, (batch, conc) in enumerate(levels):
            bar.set_postfix_str(f"batch {batch} x {conc} in flight")
            n_draws = per_level if per_level is not None else max(64, conc * 8)
            draws = draw_requests(workload, batch, n_draws, plan.seed + 7919 * n_level)
            slices = _split(draws, plan.rounds) if per_level is not None else [draws] * plan.rounds
            samples: dict[str, list[Sample]] = {n: [] for n in names}
            wall: dict[str, float] = {n: 0.0 for n in names}
            for r, part in enumerate(slices):
                order = list(targets) if r % 2 == 0 else list(reversed(targets))
                for t in order:
                    deadline = time.perf_counter() + plan.duration / plan.rounds if plan.duration is not None else None
                    got, seconds = _slice(t, part, workload, conc, batch, deadline, tick)
                    samples[t.name] += got
                    wall[t.name] += seconds
            for n in names:
                level = _level(n, batch, conc, samples[n], wall[n], workload)
                out.append(level)
                if on_level is not None:
                    on_level(level)
    finally:
        bar.close()
    return LoadProfile(tuple(names), plan, workload.to_dict(), tuple(out))


def _level(name: str, batch: int, conc: int, samples: list[Sample], wall: float, workload: Workload) -> Level:
    by_bucket = {b: [s for s in samples if s.bucket == b] for b in bucket_names(workload.edges)}
    errors = tuple(dict.fromkeys(s.detail for s in samples if s.status == "error"))[:3]
    return Level(
        name, batch, conc, figures(samples, wall), {b: figures(ss, wall) for b, ss in by_bucket.items() if ss}, errors
    )
