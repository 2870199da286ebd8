"""The GPU check's sections: each runs one piece of device work and hands its figures to ``gpu_judge``.

Every section takes a :class:`Context` and returns a :class:`gpu_report.Section`; the device is a
parameter, so each section also runs on ``cpu`` (the tests do, on the tiny random BERT). Heavy
imports (torch, transformers, faiss, ray) happen inside the sections. The sweep section, which
times sentence-transformers beside the sweep, is in ``gpu_sweep.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib.util
import io
import json
import os
import pkgutil
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from gpu_judge import compare_rankings, judge_ray, judge_runs, judge_search, judge_vectors, one_gpu_env, ray_skip_reason
from gpu_report import Section, Thresholds, skipped

if TYPE_CHECKING:
    from evalsuite.encode.base import Encoder
    from evalsuite.run.pipeline import Prepared


@dataclass(frozen=True)
class Context:
    """Where and on what the check runs. ``model``/``dataset`` None: the bundled model and fixtures."""

    workdir: Path
    device: str = "cuda"
    model: str | None = None
    dataset: str | None = None
    dtypes: tuple[str, ...] = ("float32", "float16", "bfloat16")
    sweep_docs: int = 20000  # the sweep's corpus: fixtures grown to this many documents (0: as is)
    repeat: int = 2  # sweep and sentence-transformers timed this many times; fastest kept
    poolings: tuple[str, ...] = ("cls", "mean", "last")
    dims: tuple[int, ...] = (384, 256, 128, 64)
    faiss_docs: int = 50000
    faiss_queries: int = 1000
    thresholds: Thresholds = field(default_factory=Thresholds)

    @property
    def gpu_index(self) -> int:
        return int(self.device.split(":")[1]) if ":" in self.device else 0


def device_kind(device: str) -> str:
    return device.split(":")[0]


def free_device(device: str) -> None:
    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def _release(encoder: Encoder) -> None:
    release = getattr(encoder, "release", None)
    if callable(release):
        release()


def prepare_on(ctx: Context, device: str, dataset: str | None = None) -> Prepared:
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    return prepare(RunSpec(model=ctx.model, dataset=dataset or ctx.dataset, device=device, use_cache=False))


# -- (1) vectors -----------------------------------------------------------------------------------
def encode_fixture(prepared: Prepared, *, device: str, dtype: str) -> tuple[np.ndarray, str]:
    """Final (dim-cut, normalized) query then document vectors of the contract, and the device used."""
    from evalsuite.retrieval.vectors import finalize
    from evalsuite.run.pipeline import encode_dataset, make_encoder

    on = dataclasses.replace(prepared, spec=prepared.spec.replace(device=device, use_cache=False))
    encoder = make_encoder(on, dtype=dtype)
    c = prepared.contract
    q, d = encode_dataset(encoder, c, prepared.dataset, [c.pooling])
    used = encoder.device
    _release(encoder)
    free_device(device)
    return np.vstack([finalize(q[c.pooling], c.dim, c.normalize), finalize(d[c.pooling], c.dim, c.normalize)]), used


def section_vectors(ctx: Context) -> Section:
    prepared = prepare_on(ctx, "cpu")
    reference, _ = encode_fixture(prepared, device="cpu", dtype="float32")
    got, devices = {}, {}
    for dtype in ctx.dtypes:
        got[dtype], devices[dtype] = encode_fixture(prepared, device=ctx.device, dtype=dtype)
    section = judge_vectors(reference, got, ctx.thresholds, devices=devices, want_device=device_kind(ctx.device))
    return dataclasses.replace(section, data=dict(section.data, texts=len(reference)))


# -- (2) `evalsuite run --device auto` -------------------------------------------------------------
def cli_run(ctx: Context, args: Sequence[str], out: Path) -> tuple[int, dict[str, Any] | None, str]:
    """``evalsuite run ARGS --no-cache --out OUT`` in this process: exit status, results.json, output."""
    from evalsuite.cli import main

    argv = ["run", *args, "--no-cache", "--out", str(out)]
    argv += ["--model", ctx.model] if ctx.model else []
    argv += ["--dataset", ctx.dataset] if ctx.dataset else []
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse rejected the arguments: an exit status like the command's
            rc = exc.code if isinstance(exc.code, int) else 2
    results = out / "results.json"
    return rc, json.loads(results.read_text()) if rc == 0 and results.is_file() else None, buf.getvalue()


def _run_or_raise(ctx: Context, args: Sequence[str], out: Path) -> dict[str, Any]:
    rc, results, output = cli_run(ctx, args, out)
    if results is None:
        raise RuntimeError(f"evalsuite run {' '.join(args)} exited {rc}: {output[-2000:]}")
    return results


def section_run(ctx: Context) -> Section:
    ref = _run_or_raise(ctx, ["--device", "cpu", "--dtype", "float32"], ctx.workdir / "run-cpu-float32")
    runs = {}
    for dtype in ctx.dtypes:
        res = _run_or_raise(ctx, ["--device", "auto", "--dtype", dtype], ctx.workdir / f"run-auto-{dtype}")
        runs[dtype] = (str(res["manifest"]["device"]), res["metrics"])
        free_device(ctx.device)
    return judge_runs(ref["metrics"], runs, ctx.thresholds)


# -- (4) the Ray executor --------------------------------------------------------------------------
def ray_executor_modules() -> list[str]:
    """Modules under ``evalsuite.encode`` (and names it exports) that look like a Ray executor."""
    import evalsuite.encode as enc

    pattern = re.compile(r"(^|_)ray(_|$)", re.IGNORECASE)
    found = [
        m.name
        for m in pkgutil.walk_packages(enc.__path__, prefix="evalsuite.encode.", onerror=lambda _: None)
        if pattern.search(m.name.rsplit(".", 1)[-1])
    ]
    found += [f"evalsuite.encode.{n}" for n in dir(enc) if n.startswith("Ray")]
    return found


def cli_has_executor_option() -> bool:
    """Whether `evalsuite run` accepts ``--executor ray``."""
    from evalsuite.cli import build_parser

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            _, extra = build_parser().parse_known_args(["run", "--executor", "ray"])
    except SystemExit:
        return False
    return not extra


def section_ray(ctx: Context) -> Section:
    reason = ray_skip_reason(
        ray_executor_modules(), importlib.util.find_spec("ray") is not None, cli_has_executor_option()
    )
    if reason:
        return skipped("ray", reason)
    in_process = _run_or_raise(ctx, ["--device", ctx.device, "--dtype", "float32"], ctx.workdir / "ray-in-process")
    out = ctx.workdir / "ray-executor"
    cmd = [
        sys.executable,
        "-m",
        "evalsuite.cli",
        "run",
        "--executor",
        "ray",
        "--device",
        "cuda",
        "--dtype",
        "float32",
        "--no-cache",
        "--out",
        str(out),
    ]
    cmd += ["--model", ctx.model] if ctx.model else []
    cmd += ["--dataset", ctx.dataset] if ctx.dataset else []
    proc = subprocess.run(
        cmd, check=False, capture_output=True, text=True, timeout=600, env=one_gpu_env(os.environ, ctx.gpu_index)
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {(proc.stdout + proc.stderr)[-2000:]}")
    ray = json.loads((out / "results.json").read_text())
    section = judge_ray(in_process["metrics"], ray["metrics"], str(ray["manifest"]["device"]), ctx.thresholds)
    return dataclasses.replace(section, data=dict(section.data, command=cmd, executor=ray["manifest"].get("executor")))


# -- (5) faiss-gpu ---------------------------------------------------------------------------------
def section_faiss(ctx: Context) -> Section:
    import faiss

    from evalsuite.retrieval.search import build_index

    if not hasattr(faiss, "StandardGpuResources"):
        return skipped("faiss_gpu", f"faiss-gpu is not installed (faiss {faiss.__version__} is a CPU build)")
    if faiss.get_num_gpus() < 1:
        return skipped("faiss_gpu", "faiss has GPU support but sees no GPU")
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((ctx.faiss_docs, 384)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = docs[rng.choice(ctx.faiss_docs, ctx.faiss_queries, replace=False)] + 0.1 * rng.standard_normal(
        (ctx.faiss_queries, 384)
    ).astype(np.float32)
    resources = faiss.StandardGpuResources()
    agreement = {}
    for similarity in ("cosine", "l2"):
        cpu = build_index(docs, similarity)
        gpu = faiss.index_cpu_to_gpu(resources, ctx.gpu_index, cpu)
        ref_scores, ref_ids = cpu.search(queries, 100)
        got_scores, got_ids = gpu.search(queries, 100)
        agreement[similarity] = compare_rankings(
            ref_scores, ref_ids, got_scores, got_ids, ctx.thresholds.search_score_atol
        )
    return judge_search(
        agreement,
        ctx.thresholds,
        {"documents": ctx.faiss_docs, "queries": ctx.faiss_queries, "k": 100, "dim": 384, "faiss": faiss.__version__},
    )
