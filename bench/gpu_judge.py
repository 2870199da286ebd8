"""The GPU check's judgements: each section's figures against the thresholds, as pure functions.

Inputs are numpy arrays, dicts and small frozen values; outputs are :class:`gpu_report.Section`.
Nothing here imports torch, faiss or evalsuite, so every judgement is unit-tested on CPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from gpu_report import Check, Section, Thresholds, at_least, at_most, equals, finish, fmt, mb


# -- (1) vectors per dtype against CPU float32 ------------------------------------------------------
@dataclass(frozen=True)
class CosineStats:
    n: int
    min: float | None
    median: float | None
    worst_row: int | None
    non_finite_rows: int


def cosine_stats(reference: np.ndarray, other: np.ndarray) -> CosineStats:
    """Row-wise cosine of two [n, d] arrays; rows with a NaN/inf or a zero vector count as non-finite."""
    if reference.shape != other.shape or reference.ndim != 2:
        raise ValueError(f"shapes differ or are not [n, d]: {reference.shape} vs {other.shape}")
    a, b = reference.astype(np.float64), other.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    ok = np.isfinite(cos)
    bad = int((~ok).sum())
    if len(cos) == 0 or bad:
        return CosineStats(len(cos), None, None, int(np.flatnonzero(~ok)[0]) if bad else None, bad)
    return CosineStats(len(cos), float(cos.min()), float(np.median(cos)), int(cos.argmin()), 0)


def judge_vectors(
    reference: np.ndarray,
    by_dtype: Mapping[str, np.ndarray],
    thresholds: Thresholds,
    *,
    devices: Mapping[str, str] | None = None,
    want_device: str | None = None,
) -> Section:
    """Each dtype's vectors against the CPU float32 ``reference``, row by row; with ``devices`` and
    ``want_device``, each dtype must also have been encoded on that kind of device."""
    checks: list[Check] = []
    data: dict[str, Any] = {}
    parts = []
    for dtype, got in by_dtype.items():
        st = cosine_stats(reference, got)
        data[dtype] = dict(asdict(st), device=(devices or {}).get(dtype))
        if devices is not None and want_device is not None:
            checks.append(equals(f"{dtype}.device", devices.get(dtype, "none").split(":")[0], want_device))
        checks.append(at_least(f"{dtype}.min_cosine", st.min, thresholds.min_cosine[dtype]))
        checks.append(equals(f"{dtype}.non_finite_rows", st.non_finite_rows, 0))
        parts.append(f"{dtype} min {fmt(st.min, 6)} med {fmt(st.median, 6)}")
    return finish("vectors", checks, "; ".join(parts), data)


# -- (2) `evalsuite run --device auto` per dtype against CPU float32 -------------------------------
def metric_deltas(reference: Mapping[str, float], other: Mapping[str, float]) -> dict[str, float | None]:
    """``other - reference`` per reference metric; None where ``other`` lacks the metric."""
    return {m: (other[m] - v if m in other else None) for m, v in reference.items()}


def max_abs(deltas: Mapping[str, float | None]) -> float | None:
    """Largest |delta|; None when any delta is missing (a missing metric never passes)."""
    if not deltas or any(d is None for d in deltas.values()):
        return None
    return max(abs(d) for d in deltas.values() if d is not None)


def judge_runs(
    reference: Mapping[str, float],
    runs: Mapping[str, tuple[str, Mapping[str, float]]],
    thresholds: Thresholds,
    *,
    want_device: str = "cuda",
) -> Section:
    """``runs``: {dtype: (device the run reported, metrics)}; each must be on ``want_device`` and within
    the dtype's tolerance of the CPU float32 ``reference`` on every metric."""
    checks: list[Check] = []
    data: dict[str, Any] = {"reference_cpu_float32": dict(reference)}
    parts = []
    for dtype, (device, metrics) in runs.items():
        deltas = metric_deltas(reference, metrics)
        worst = max_abs(deltas)
        data[dtype] = {"device": device, "metrics": dict(metrics), "deltas": deltas}
        checks.append(equals(f"{dtype}.device", device.split(":")[0], want_device))
        checks.append(at_most(f"{dtype}.max_abs_metric_delta", worst, thresholds.metric_tolerance[dtype]))
        parts.append(f"{dtype} on {device} max|d| {fmt(worst, 4)}")
    return finish("run", checks, "; ".join(parts), data)


# -- (3) the grid sweep beside sentence-transformers ------------------------------------------------
@dataclass(frozen=True)
class SweepFigures:
    cells: int
    expected_cells: int
    passes_by_role: Mapping[str, int]
    device: str
    tokens: int
    sweep_seconds: float
    st_seconds: float
    sweep_peak_bytes: int | None
    st_peak_bytes: int | None


def judge_sweep(f: SweepFigures, thresholds: Thresholds, *, want_device: str = "cuda") -> Section:
    ratio = f.sweep_seconds / f.st_seconds if f.st_seconds > 0 else None
    mem_ratio = f.sweep_peak_bytes / f.st_peak_bytes if f.sweep_peak_bytes is not None and f.st_peak_bytes else None
    data = dict(
        asdict(f),
        time_ratio=ratio,
        memory_ratio=mem_ratio,
        sweep_tokens_per_second=f.tokens / f.sweep_seconds if f.sweep_seconds > 0 else None,
        st_tokens_per_second=f.tokens / f.st_seconds if f.st_seconds > 0 else None,
    )
    checks = [
        equals("cells", f.cells, f.expected_cells),
        equals("query_forward_passes", f.passes_by_role.get("query"), 1),
        equals("document_forward_passes", f.passes_by_role.get("document"), 1),
        equals("device", f.device.split(":")[0], want_device),
        at_most("time_ratio_sweep_over_st", ratio, thresholds.sweep_max_time_ratio),
        at_most("peak_memory_ratio_sweep_over_st", mem_ratio, thresholds.sweep_max_memory_ratio),
    ]
    summary = (
        f"{f.cells} cells {f.sweep_seconds:.2f} s vs ST {f.st_seconds:.2f} s = {fmt(ratio, 2)}x; "
        f"{fmt(data['sweep_tokens_per_second'], 0)} vs {fmt(data['st_tokens_per_second'], 0)} tok/s; "
        f"peak {mb(f.sweep_peak_bytes)} vs {mb(f.st_peak_bytes)} MB"
    )
    return finish("sweep", checks, summary, data)


# -- (4) the Ray executor ---------------------------------------------------------------------------
def ray_skip_reason(executor_modules: Sequence[str], ray_installed: bool, cli_has_executor: bool) -> str | None:
    """Why the Ray section cannot run, or None when it can."""
    if not executor_modules:
        return "no Ray executor in this evalsuite"
    if not cli_has_executor:
        return (
            f"evalsuite has a Ray executor ({', '.join(executor_modules)}) but `evalsuite run` has no "
            "--executor ray option"
        )
    if not ray_installed:
        return "Ray is not installed (pip install 'evalsuite[ray]' or ray[data])"
    return None


def one_gpu_env(environ: Mapping[str, str], index: int) -> dict[str, str]:
    """``environ`` with CUDA_VISIBLE_DEVICES narrowed to the ``index``-th visible GPU (one GPU actor)."""
    visible = [v for v in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    chosen = visible[index] if visible else str(index)
    return dict(environ, CUDA_VISIBLE_DEVICES=chosen)


def judge_ray(
    in_process: Mapping[str, float],
    ray: Mapping[str, float],
    ray_device: str,
    thresholds: Thresholds,
    *,
    want_device: str = "cuda",
) -> Section:
    deltas = metric_deltas(in_process, ray)
    worst = max_abs(deltas)
    checks = [
        equals("device", ray_device.split(":")[0], want_device),
        at_most("max_abs_metric_delta_vs_in_process", worst, thresholds.ray_metric_tolerance),
    ]
    data = {"in_process": dict(in_process), "ray": dict(ray), "deltas": deltas, "device": ray_device}
    return finish("ray", checks, f"Ray on {ray_device}: max|d| vs in-process {fmt(worst, 6)}", data)


# -- (5) faiss-gpu exact search against CPU ---------------------------------------------------------
@dataclass(frozen=True)
class SearchAgreement:
    queries: int
    mismatched_queries: int
    max_score_diff: float
    first_mismatch: int | None


def compare_rankings(
    ref_scores: np.ndarray, ref_ids: np.ndarray, got_scores: np.ndarray, got_ids: np.ndarray, atol: float
) -> SearchAgreement:
    """Two exact top-k searches ([q, k] scores and ids, best first) agree when the scores agree rank by rank
    within ``atol`` and each run of tied scores (gaps <= ``atol``) holds the same ids, in any order. The
    last tied run may hold other ids (ties beyond rank k decide it)."""
    if ref_scores.shape != got_scores.shape or ref_ids.shape != got_ids.shape or ref_ids.shape != ref_scores.shape:
        raise ValueError(
            f"search outputs differ in shape: {ref_scores.shape}/{ref_ids.shape} vs {got_scores.shape}/{got_ids.shape}"
        )
    diff = np.abs(ref_scores.astype(np.float64) - got_scores.astype(np.float64))
    max_diff = float(diff.max()) if diff.size else 0.0
    bad: list[int] = []
    for q in range(ref_ids.shape[0]):
        s, k = ref_scores[q], ref_ids.shape[1]
        if not np.all(diff[q] <= atol):
            bad.append(q)
            continue
        start = 0
        for i in range(1, k + 1):
            if i == k or abs(float(s[i]) - float(s[i - 1])) > atol:
                if i < k and set(ref_ids[q, start:i].tolist()) != set(got_ids[q, start:i].tolist()):
                    bad.append(q)
                    break
                start = i
    return SearchAgreement(ref_ids.shape[0], len(bad), max_diff, bad[0] if bad else None)


def judge_search(
    by_similarity: Mapping[str, SearchAgreement], thresholds: Thresholds, data: Mapping[str, Any] | None = None
) -> Section:
    checks, parts = [], []
    out = dict(data or {})
    for sim, a in by_similarity.items():
        out[sim] = asdict(a)
        checks.append(equals(f"{sim}.mismatched_queries", a.mismatched_queries, 0))
        checks.append(at_most(f"{sim}.max_score_diff", a.max_score_diff, thresholds.search_score_atol))
        parts.append(f"{sim}: {a.mismatched_queries}/{a.queries} queries differ, max score diff {a.max_score_diff:.2g}")
    return finish("faiss_gpu", checks, "; ".join(parts), out)
