"""The prepared GPU check: one command that proves the CUDA paths on a CUDA machine.

    .venv/bin/python bench/gpu_check.py [--out reports/gpu_check.json] [--sections vectors,run,...]

Sections (each passes or fails against the thresholds in ``gpu_report.Thresholds``, which the README's
"GPU" section states; a section that cannot run here is marked skipped with the reason):

  vectors    the reference encoder on the GPU in float32, float16 and bfloat16 against CPU float32
             vectors of the fixture texts: min and median cosine per dtype;
  run        `evalsuite run --device auto` per dtype picks the GPU, metrics within tolerance of CPU float32;
  sweep      the 12-cell grid sweep (3 poolings x 4 dims) and one sentence-transformers encode of the same
             corpus on the same GPU, side by side: time ratio, tokens/s, peak GPU memory;
  ray        the Ray executor with one GPU actor equals the in-process run (skipped without one);
  faiss_gpu  faiss-gpu exact search equals CPU exact search (skipped without faiss-gpu).

Writes one JSON file and prints a table. Exit status: 0 every section passed or was skipped, 1 a check
failed or a section raised, 2 no CUDA device (at once, having imported nothing heavier than torch).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpu_report import Section, assemble, errored, exit_status, json_text, no_cuda_message, render_table
from gpu_sections import Context, free_device, section_faiss, section_ray, section_run, section_vectors
from gpu_sweep import section_sweep

DEFAULT_OUT = Path("reports") / "gpu_check.json"

SECTIONS: dict[str, Callable[[Context], Section]] = {
    "vectors": section_vectors,
    "run": section_run,
    "sweep": section_sweep,
    "ray": section_ray,
    "faiss_gpu": section_faiss,
}


def run_sections(
    names: Sequence[str],
    ctx: Context,
    *,
    sections: dict[str, Callable[[Context], Section]] | None = None,
    log: Callable[[Section], None] | None = None,
) -> list[Section]:
    """Run each named section in turn; one that raises becomes an ``error`` section and the rest still run."""
    table = SECTIONS if sections is None else sections
    out = []
    for name in names:
        t0 = time.perf_counter()
        try:
            section = table[name](ctx)
            free_device(ctx.device)
        except Exception as exc:
            section = errored(name, exc)
            with contextlib.suppress(Exception):  # a device left broken is reported by the next section itself
                free_device(ctx.device)
        section = dataclasses.replace(section, seconds=round(time.perf_counter() - t0, 2))
        out.append(section)
        if log is not None:
            log(section)
    return out


def _sections(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in SECTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown section(s) {unknown or text!r}; choose from {', '.join(SECTIONS)}")
    return names


def _at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= {minimum}")
        return int(text)

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpu_check.py", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON report (default: {DEFAULT_OUT})")
    p.add_argument(
        "--sections",
        type=_sections,
        default=tuple(SECTIONS),
        help=f"comma-separated subset of {','.join(SECTIONS)} (default: all)",
    )
    p.add_argument("--device", default="cuda", help="the GPU to check: cuda or cuda:N (default: cuda)")
    p.add_argument(
        "--sweep-docs",
        type=_at_least(0),
        default=Context.sweep_docs,
        help=f"documents in the sweep's corpus, fixtures grown by perturbed copies; 0 keeps the "
        f"fixtures as they are (default: {Context.sweep_docs})",
    )
    p.add_argument(
        "--repeat",
        type=_at_least(1),
        default=Context.repeat,
        help=f"time the sweep and sentence-transformers this many times, keep the fastest (default: {Context.repeat})",
    )
    return p


def environment(device: str) -> dict[str, Any]:
    import platform
    from importlib import metadata

    import torch

    props = torch.cuda.get_device_properties(device)
    libraries = {}
    for dist in (
        "evalsuite",
        "torch",
        "transformers",
        "sentence-transformers",
        "faiss-cpu",
        "faiss-gpu",
        "faiss-gpu-cu12",
        "ray",
        "ranx",
        "numpy",
    ):
        try:
            libraries[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return {
        "gpu": props.name,
        "gpu_memory_gib": round(props.total_memory / 2**30, 1),
        "compute_capability": f"{props.major}.{props.minor}",
        "gpu_count": torch.cuda.device_count(),
        "device": device,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),  # type: ignore[no-untyped-call]
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "libraries": libraries,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print(f"gpu_check: {no_cuda_message(torch.__version__, torch.version.cuda)}", file=sys.stderr)
        return 2
    index = args.device.partition(":")[2]
    if not args.device.startswith("cuda") or (
        index and (not index.isdigit() or int(index) >= torch.cuda.device_count())
    ):
        print(
            f"gpu_check: --device {args.device!r} is not one of this machine's "
            f"{torch.cuda.device_count()} CUDA device(s); use cuda or cuda:N",
            file=sys.stderr,
        )
        return 2
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TQDM_DISABLE"):
        os.environ.setdefault(var, "1")

    env = environment(args.device)
    title = f"GPU check on {env['gpu']} ({args.device}); torch {env['torch']}, CUDA {env['cuda']}"
    print(title, flush=True)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="evalsuite-gpu-check-") as tmp:
        ctx = Context(workdir=Path(tmp), device=args.device, sweep_docs=args.sweep_docs, repeat=args.repeat)
        sections = run_sections(
            args.sections, ctx, log=lambda s: print(f"  {s.name}: {s.status} ({s.seconds:.1f} s)", flush=True)
        )
    command = [sys.executable, sys.argv[0], *(sys.argv[1:] if argv is None else argv)]
    report = assemble(env, sections, ctx.thresholds, command=command, created=created, seconds=time.perf_counter() - t0)
    from evalsuite.io import atomic_write_text

    atomic_write_text(args.out, json_text(report))
    print()
    print(render_table(sections, title))
    print(f"wrote {args.out}")
    return exit_status(sections)


if __name__ == "__main__":
    sys.exit(main())
