"""The GPU check's values and report: checks, sections, thresholds, the JSON file and the table.

Pure: nothing here imports torch, faiss or evalsuite, and nothing needs a GPU. The per-section
judgements live in ``gpu_judge.py``; the device work in ``gpu_sections.py`` and ``gpu_sweep.py``.
The thresholds are the ones the README's "GPU" section states.
"""

from __future__ import annotations

import json
import math
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

SCHEMA = "evalsuite-gpu-check/1"
STATUSES = ("pass", "fail", "skipped", "error")


@dataclass(frozen=True)
class Thresholds:
    """What each section must meet (the README's GPU section quotes these)."""

    min_cosine: Mapping[str, float] = field(
        default_factory=lambda: {"float32": 0.9999, "float16": 0.999, "bfloat16": 0.99}
    )
    metric_tolerance: Mapping[str, float] = field(
        default_factory=lambda: {"float32": 0.001, "float16": 0.005, "bfloat16": 0.01}
    )
    sweep_max_time_ratio: float = 1.3  # 12-cell grid sweep seconds / one sentence-transformers encode
    sweep_max_memory_ratio: float = 1.5  # peak GPU memory of the sweep / of the sentence-transformers encode
    ray_metric_tolerance: float = 1e-4  # Ray executor vs in-process run, every metric
    search_score_atol: float = 1e-4  # faiss-gpu vs CPU exact search, per rank; also the tie width

    def to_dict(self) -> dict[str, Any]:
        return {k: dict(v) if isinstance(v, Mapping) else v for k, v in asdict(self).items()}


# -- checks and sections ---------------------------------------------------------------------------
Value = float | int | str | None


@dataclass(frozen=True)
class Check:
    """One comparison against a stated threshold; a missing or non-finite value never passes."""

    name: str
    value: Value
    op: str
    threshold: Value
    passed: bool

    def describe(self) -> str:
        shown = f"{self.value:.6g}" if isinstance(self.value, float) else repr(self.value)
        return f"{self.name} = {shown} (want {self.op} {self.threshold})"


def _finite(value: Value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def at_least(name: str, value: Value, threshold: float) -> Check:
    return Check(name, value, ">=", threshold, _finite(value) and value >= threshold)  # type: ignore[operator]


def at_most(name: str, value: Value, threshold: float) -> Check:
    return Check(name, value, "<=", threshold, _finite(value) and value <= threshold)  # type: ignore[operator]


def equals(name: str, value: Value, expected: Value) -> Check:
    return Check(name, value, "==", expected, value is not None and value == expected)


@dataclass(frozen=True)
class Section:
    """One section's outcome: ``pass`` / ``fail`` from its checks, ``skipped`` or ``error`` with a reason."""

    name: str
    status: str
    summary: str
    checks: tuple[Check, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)
    seconds: float | None = None

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "summary": self.summary,
            "seconds": self.seconds,
            "checks": [asdict(c) for c in self.checks],
            "data": dict(self.data),
        }


def finish(name: str, checks: Sequence[Check], summary: str, data: Mapping[str, Any] | None = None) -> Section:
    """``pass`` when there is at least one check and every check passed, else ``fail``."""
    status = "pass" if checks and all(c.passed for c in checks) else "fail"
    return Section(name, status, summary, tuple(checks), dict(data or {}))


def skipped(name: str, reason: str) -> Section:
    return Section(name, "skipped", f"skipped: {reason}")


def errored(name: str, exc: BaseException) -> Section:
    tail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
    return Section(name, "error", f"error: {type(exc).__name__}: {exc}", data={"traceback": tail})


def exit_status(sections: Sequence[Section]) -> int:
    """0 when every section passed or was skipped, 1 when a check failed or a section errored."""
    return 0 if all(s.status in ("pass", "skipped") for s in sections) else 1


# -- the whole report -------------------------------------------------------------------------------
def no_cuda_message(torch_version: str, cuda_build: str | None) -> str:
    built = f"built for CUDA {cuda_build}" if cuda_build else "built for CPU"
    base = torch_version.split("+")[0]
    return (
        f"no CUDA device: torch.cuda.is_available() is False (torch {torch_version}, {built}); run on a CUDA "
        f"machine after `TORCH_SPEC='torch=={base}+cuXXX' PIP_EXTRA_INDEX_URL=https://download.pytorch.org/"
        "whl/cuXXX bash scripts/bootstrap.sh` (cuXXX: your CUDA version, e.g. cu128)"
    )


def assemble(
    environment: Mapping[str, Any],
    sections: Sequence[Section],
    thresholds: Thresholds,
    *,
    command: Sequence[str],
    created: str,
    seconds: float,
) -> dict[str, Any]:
    status = exit_status(sections)
    return {
        "schema": SCHEMA,
        "created": created,
        "command": list(command),
        "seconds": round(seconds, 2),
        "passed": status == 0,
        "exit_status": status,
        "environment": dict(environment),
        "thresholds": thresholds.to_dict(),
        "sections": {s.name: s.to_dict() for s in sections},
    }


def json_safe(obj: Any) -> Any:
    """Non-finite floats become None and numpy scalars plain numbers, so the file is strict JSON."""
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def json_text(report: Mapping[str, Any]) -> str:
    return json.dumps(json_safe(report), indent=2, allow_nan=False) + "\n"


def render_table(sections: Sequence[Section], title: str) -> str:
    rows = [(s.name, s.status, "" if s.seconds is None else f"{s.seconds:.1f}", s.summary) for s in sections]
    w = [max(len(r[i]) for r in [*rows, ("section", "status", "seconds", "")]) for i in range(3)]
    lines = [title, f"{'section':<{w[0]}}  {'status':<{w[1]}}  {'seconds':>{w[2]}}  summary"]
    lines += [f"{n:<{w[0]}}  {st:<{w[1]}}  {sec:>{w[2]}}  {summ}" for n, st, sec, summ in rows]
    failed = [(s.name, c) for s in sections for c in s.failed_checks]
    if failed:
        lines.append("failed checks:")
        lines += [f"  {name}: {c.describe()}" for name, c in failed]
    verdict = "all checks passed" if exit_status(sections) == 0 else "GPU CHECK FAILED"
    skips = [s.name for s in sections if s.status == "skipped"]
    lines.append(verdict + (f" ({len(skips)} skipped: {', '.join(skips)})" if skips else ""))
    return "\n".join(lines)


def fmt(value: float | None, digits: int) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def mb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:.0f}"
