"""The GPU check's bundle: what the lent GPU machine lacks, packed to travel in one call, and installed there.

    .venv/bin/python bench/gpu_bundle.py pack --stage DIR --out DIR --model DIR --python 3.12 [--xz-preset N]

``bench/gpu_bundle.sh`` fetches the pinned wheels (``bench/gpu_bundle.txt``) and builds evalsuite's
wheel into a stage folder, then calls ``pack``. ``pack`` writes into ``--out``:

  wheels.tar.xz   the wheels, each re-stored uncompressed so that xz packs their contents (faiss-cpu:
                  19 MB as a wheel, about 9 MB so);
  model/          the model directory with its float32 weights stored as float16 (half the bytes; xz
                  would gain little on them and take minutes);
  manifest.json   the target Python, the wheels with their sha256, the model's weights before and after,
                  and the sizes.

``install`` (``gpu_check.py --bundle DIR`` calls it) unpacks the wheels and installs them with
``pip install --no-index --no-deps --target`` into a site folder the check then imports from; the model
is read where it lies. Nothing here imports torch or evalsuite: the model is converted with
``safetensors.numpy``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ARCHIVE = "wheels.tar.xz"
MODEL = "model"
MANIFEST = "manifest.json"
SCHEMA = "evalsuite-gpu-bundle/1"
WEIGHTS = "model.safetensors"
MODEL_NOTE = (
    "the model's float32 weights travel as float16 (half the bytes) and are loaded back as float32; the "
    "reference for every comparison is then the float16-rounded weights run in float32 on the CPU, against the "
    "same weights on the GPU, so the check compares devices and dtypes, not the original checkpoint (whose "
    "vectors differ from these by the rounding of the weights)"
)
_SKIP_MODEL_FILES = (".gitattributes",)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# -- pack (here) ---------------------------------------------------------------------------------------
def half_model(src: Path, dst: Path) -> dict[str, Any]:
    """Copy the model directory ``src`` to ``dst`` with ``model.safetensors``'s float32 tensors as float16."""
    from safetensors.numpy import load_file, save_file

    weights = src / WEIGHTS
    if not weights.is_file():
        raise SystemExit(f"gpu_bundle: {weights} not found: --model must be a directory holding {WEIGHTS}")
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(WEIGHTS, *_SKIP_MODEL_FILES, "__pycache__"))
    tensors = load_file(str(weights))
    halved = [name for name, t in tensors.items() if t.dtype == np.float32]
    for name in halved:
        tensors[name] = tensors[name].astype(np.float16)
    save_file(tensors, str(dst / WEIGHTS), metadata={"format": "pt"})
    return {
        "source": str(src),
        "weights_bytes_float32": weights.stat().st_size,
        "weights_bytes_stored": (dst / WEIGHTS).stat().st_size,
        "tensors_halved": len(halved),
        "tensors_kept": len(tensors) - len(halved),
        "note": MODEL_NOTE,
    }


def stored_wheel(src: Path, dst: Path) -> None:
    """The wheel ``src`` rewritten without compression (same entries, same bytes: RECORD still holds)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            info.compress_type = zipfile.ZIP_STORED
            zout.writestr(info, data)


def pack(stage: Path, out: Path, model: Path, python: str, preset: int) -> dict[str, Any]:
    """``stage/wheels/*.whl`` into ``out/wheels.tar.xz``, ``model`` halved into ``out/model``, and
    ``out/manifest.json``."""
    wheels = sorted((stage / "wheels").glob("*.whl"))
    names = [w.name.split("-")[0].lower() for w in wheels]
    twice = sorted({n for n in names if names.count(n) > 1})
    if not wheels or twice:
        raise SystemExit(f"gpu_bundle: {stage / 'wheels'} must hold one wheel per package (twice: {twice})")
    stored = stage / "stored"
    shutil.rmtree(stored, ignore_errors=True)
    stored.mkdir(parents=True)
    for w in wheels:
        stored_wheel(w, stored / w.name)
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / MODEL, ignore_errors=True)
    model_info = half_model(model, out / MODEL)
    archive = out / ARCHIVE
    tmp = archive.with_suffix(".part")
    with tarfile.open(tmp, "w:xz", preset=preset) as tar:
        tar.add(stored, arcname="wheels")
    tmp.replace(archive)
    shutil.rmtree(stored)
    manifest = {
        "schema": SCHEMA,
        "python": python,
        "wheels": {w.name: {"bytes": w.stat().st_size, "sha256": sha256(w)} for w in wheels},
        "model": model_info,
        "archive": {"name": ARCHIVE, "bytes": archive.stat().st_size, "sha256": sha256(archive), "xz_preset": preset},
        "bytes": sum(p.stat().st_size for p in out.rglob("*") if p.is_file()),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def run_line(bundle: Path) -> str:
    """The one device ``run`` call that uses the bundle at ``bundle``, named relative to the repository root
    (the working directory): ``carry`` takes only such paths."""
    if bundle.is_absolute() and bundle.is_relative_to(Path.cwd()):
        bundle = bundle.relative_to(Path.cwd())
    command = (
        f"PYTHONUNBUFFERED=1 python3 bench/gpu_check.py --bundle {bundle} --out $OUT/gpu_check.json "
        f"2>&1 | tee $OUT/gpu_check.log"
    )
    return json.dumps({"carry": [str(bundle)], "timeout_s": 540, "command": command})


# -- install (there) ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Installed:
    """An unpacked and installed bundle: import from ``site``, load the model from ``model``."""

    site: Path
    model: Path
    manifest: dict[str, Any]


class BundleError(Exception):
    """The bundle is missing, was built for another Python, or does not install; the message says what to do."""


def read_manifest(bundle: Path) -> dict[str, Any]:
    path = bundle / MANIFEST
    if not all(p.exists() for p in (path, bundle / ARCHIVE, bundle / MODEL)):
        raise BundleError(f"{bundle} lacks {MANIFEST}, {ARCHIVE} or {MODEL}/: build it with bash bench/gpu_bundle.sh")
    manifest: dict[str, Any] = json.loads(path.read_text())
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if manifest.get("python") != here:
        raise BundleError(
            f"{path}: the bundle was built for Python {manifest.get('python')}, this is Python {here}; "
            f"rebuild it with bash bench/gpu_bundle.sh --python {here}"
        )
    return manifest


def install(bundle: Path, workdir: Path) -> Installed:
    """Unpack ``bundle``'s wheels under ``workdir`` and install them with no index into ``workdir/site``."""
    manifest = read_manifest(bundle)
    unpacked = workdir / "bundle"
    with tarfile.open(bundle / ARCHIVE, "r:xz") as tar:
        tar.extractall(unpacked, filter="data")
    site = workdir / "site"
    wheels = sorted(str(w) for w in (unpacked / "wheels").glob("*.whl"))
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
    cmd += ["--no-cache-dir", "--disable-pip-version-check", "--target", str(site), *wheels]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BundleError(f"{' '.join(cmd)} exited {proc.returncode}: {(proc.stdout + proc.stderr)[-2000:]}")
    return Installed(site=site, model=bundle / MODEL, manifest=manifest)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gpu_bundle.py", description="pack the GPU check's bundle (see gpu_bundle.sh)")
    sub = p.add_subparsers(dest="verb", required=True)
    pk = sub.add_parser("pack", help="wheels in STAGE/wheels and the model into OUT")
    pk.add_argument("--stage", type=Path, required=True)
    pk.add_argument("--out", type=Path, required=True)
    pk.add_argument("--model", type=Path, required=True)
    pk.add_argument("--python", required=True, help="the Python the wheels were fetched for, e.g. 3.12")
    pk.add_argument("--xz-preset", type=int, choices=range(10), default=6, help="xz compression level (default 6)")
    args = p.parse_args(argv)
    manifest = pack(args.stage, args.out, args.model, args.python, args.xz_preset)
    m = manifest["model"]
    print(f"wrote {args.out}: {manifest['bytes'] / 2**20:.1f} MiB for Python {args.python}")
    print(f"  {ARCHIVE}: {manifest['archive']['bytes'] / 2**20:.1f} MiB, {', '.join(manifest['wheels'])}")
    print(f"  {MODEL}/: {m['source']}, weights {m['weights_bytes_stored'] / 2**20:.1f} MiB as float16")
    print("device run call (from the repository root):")
    print(f"  {run_line(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
