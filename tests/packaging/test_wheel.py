"""Installed, not cloned: the wheel a release pipeline installs carries everything it needs.

Builds the sdist and the wheel from a clean copy of the source (offline: the build backend is the
test environment's setuptools), checks the wheel built from the sdist is the same, installs the wheel
into a fresh virtualenv and runs evalsuite there from directories outside the repository: `evalsuite
run` and `evalsuite sweep` with no dataset, and `pytest --model-rev REV` in a copy of
`examples/release_gate`.

The fresh venv gets no evalsuite but the wheel: its dependencies (torch, transformers, faiss, ...) come
from this environment's site-packages through a `.pth` line, so nothing is downloaded (a bare `pip
install` would fetch a multi-GB torch); `.pth` files there (this environment's editable evalsuite) are
not processed, so `import evalsuite` can only find the wheel's copy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..plugins.conftest import demo_plugin

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.xdist_group("wheel")]

REPO = Path(__file__).resolve().parents[2]
SOURCE = ("pyproject.toml", "README.md", "evalsuite", "fixtures/minibeir")  # what the build reads


def _sh(argv: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def _ok(argv: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = _sh(argv, cwd, env)
    assert proc.returncode == 0, f"{argv} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _pip(*args: str | Path) -> list[str | Path]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args]


def _fresh_venv(root: Path) -> Path:
    """A virtualenv with no evalsuite; this environment's site-packages provide the dependencies."""
    _ok([sys.executable, "-m", "venv", "--without-pip", root], cwd=root.parent)
    python = root / "bin" / "python"
    site = _ok([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root).strip()
    (Path(site) / "shared_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@dataclass(frozen=True)
class Built:
    wheel: Path
    wheel_from_sdist: Path
    sdist: Path
    source: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    for rel in SOURCE:  # a clean copy: no build/ or egg-info of the checkout, symbolic links kept
        target = src / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / rel).is_dir():
            shutil.copytree(REPO / rel, target, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / rel, target)
    assert (src / "evalsuite" / "bundled" / "minibeir").is_symlink()
    build = [
        sys.executable,
        "-c",
        "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))",
    ]
    sdist = base / "sdist" / _ok([*build, base / "sdist"], cwd=src).strip().splitlines()[-1]
    offline = ("wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet")
    _ok(_pip(*offline, "-w", base / "direct", src), cwd=base)
    _ok(_pip(*offline, "-w", base / "from_sdist", sdist), cwd=base)
    (wheel,) = (base / "direct").glob("evalsuite-*.whl")
    (from_sdist,) = (base / "from_sdist").glob("evalsuite-*.whl")
    return Built(wheel, from_sdist, sdist, src)


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ directory of a fresh venv with the wheel installed."""
    python = _fresh_venv(tmp_path_factory.mktemp("venv") / "venv")
    _ok(_pip("--python", python, "install", "--no-deps", "--no-index", "--quiet", built.wheel), cwd=python.parent)
    return python.parent


@pytest.fixture(scope="module")
def user_env() -> dict[str, str]:
    """A user's shell: no PYTHONPATH into the checkout; the test session's embedding cache kept."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}


def test_the_sdist_builds_the_same_wheel_and_both_carry_the_dataset(built: Built):
    names = sorted(zipfile.ZipFile(built.wheel).namelist())
    assert names == sorted(zipfile.ZipFile(built.wheel_from_sdist).namelist())
    data = REPO / "fixtures" / "minibeir"
    expected = {f"evalsuite/bundled/minibeir/{p.relative_to(data).as_posix()}" for p in data.rglob("*") if p.is_file()}
    assert {n for n in names if n.startswith("evalsuite/bundled/")} == expected
    assert "evalsuite/py.typed" in names and "evalsuite/__main__.py" in names
    assert not [n for n in names if n.startswith(("tests/", "fixtures/", "examples/"))]
    with zipfile.ZipFile(built.wheel) as zf:  # the long description a user reads carries the torch note
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        text = zf.read(meta).decode()
    assert "--index-url https://download.pytorch.org/whl/cpu" in text


def test_an_editable_install_finds_the_dataset_in_the_source(built: Built, tmp_path: Path, user_env):
    python = _fresh_venv(tmp_path / "venv")
    offline = ("--no-deps", "--no-build-isolation", "--no-index", "--quiet")
    _ok(_pip("--python", python, "install", *offline, "-e", built.source), cwd=tmp_path)
    (tmp_path / "empty").mkdir()
    code = "from evalsuite.base.resources import bundled_dataset_dir as d; print(d())"
    found = Path(_ok([python, "-c", code], cwd=tmp_path / "empty", env=user_env).strip())
    assert found == built.source / "evalsuite" / "bundled" / "minibeir"
    assert found.resolve() == (built.source / "fixtures" / "minibeir").resolve()


def test_run_and_sweep_from_an_empty_directory(installed: Path, tmp_path: Path, user_env):
    out = _ok([installed / "evalsuite", "--version"], cwd=tmp_path, env=user_env)
    assert re.match(rf"evalsuite \d+\.\d+\.\d+\S* from {re.escape(str(installed.parent))}/lib/\S+/evalsuite ", out)
    out = _ok([installed / "evalsuite", "run", "--device", "cpu"], cwd=tmp_path, env=user_env)
    assert re.search(r"^dataset  minibeir \(458 documents, 190 queries", out, re.M), out
    assert re.search(r"^\s+ndcg@10\s+0\.7635$", out, re.M), out
    assert (tmp_path / "reports" / "minibeir" / "all-MiniLM-L6-v2" / "results.json").is_file()
    out = _ok(
        [installed / "evalsuite", "sweep", "--device", "cpu", "--vary", "pooling=cls,mean"], cwd=tmp_path, env=user_env
    )
    assert re.search(r"^\s+base\s+0\.7635\s", out, re.M), out
    assert re.search(r"^\s+pooling=cls\s+0\.6712\s+-0\.0923\*", out, re.M), out


@pytest.mark.parametrize("retrieval", ["bm25", "sparse", "hybrid"])
def test_each_retriever_runs_from_the_installed_wheel_as_from_the_clone(
    installed: Path, tmp_path: Path, user_env, small_beir: Path, tmp_path_factory: pytest.TempPathFactory, retrieval
):
    """`evalsuite run --retrieval R` from the installed wheel (a BGE-M3-shaped model: its dense, sparse heads)
    scores exactly what the clone's own CLI scores in this process, and records the retriever in its contract."""
    from evalsuite.cli import main
    from evalsuite.testing.tiny_sparse import write_tiny_bgem3

    model = write_tiny_bgem3(tmp_path_factory.mktemp("bgem3") / "m")
    argv = ["run", "--model", str(model), "--dataset", str(small_beir), "--device", "cpu", "--no-cache"]
    argv += ["--retrieval", retrieval]
    _ok([installed / "evalsuite", *argv, "--out", tmp_path / "wheel"], cwd=tmp_path, env=user_env)
    assert main([*argv, "--out", str(tmp_path / "clone")]) == 0
    wheel, clone = (json.loads((tmp_path / n / "results.json").read_text()) for n in ("wheel", "clone"))
    assert wheel["metrics"] == clone["metrics"] and wheel["per_query"] == clone["per_query"]
    assert wheel["manifest"]["contract"]["retrieval"].split(":")[0] == retrieval
    assert (tmp_path / "wheel" / "run.trec").read_text() == (tmp_path / "clone" / "run.trec").read_text()


def test_a_users_project_gates_a_release_with_the_installed_plugin(installed: Path, tmp_path: Path, user_env):
    project = tmp_path / "project"  # examples/release_gate copied out of the repository
    shutil.copytree(REPO / "examples" / "release_gate", project, ignore=shutil.ignore_patterns("reports"))
    rev = _ok([installed / "evalsuite", "model-rev"], cwd=project, env=user_env).strip()
    code = "import evalsuite.pytest_plugin as p; print(p.__file__)"
    assert _ok([installed / "python", "-c", code], cwd=project, env=user_env).startswith(str(installed.parent))

    pytest_argv = [installed / "python", "-m", "pytest", "-p", "no:randomly", "-p", "no:xdist", "--model-rev", rev]
    passed = _sh(pytest_argv, project, user_env)
    assert passed.returncode == 0, passed.stdout[-4000:] + passed.stderr[-2000:]
    assert re.search(r"^plugins: .*\bevalsuite-\d", passed.stdout, re.M), passed.stdout[:2000]  # the entry point
    assert re.search(r"^\s+PASS\s+ndcg@10:max_drop=0\.01: delta \+0\.0000", passed.stdout, re.M), passed.stdout[-4000:]
    assert (project / "reports").is_dir()

    regressed = _sh([*pytest_argv, "--pooling", "cls"], project, user_env)
    assert regressed.returncode == 1, regressed.stdout[-4000:] + regressed.stderr[-2000:]
    assert re.search(r"^\s+FAIL\s+ndcg@10:max_drop=0\.01: delta -", regressed.stdout, re.M), regressed.stdout[-4000:]


def _workflow_steps(project: Path) -> list[dict[str, str]]:
    """The GitHub Actions job's steps that run a command (not an action), in order."""
    import yaml

    workflow = yaml.safe_load((project / ".github" / "workflows" / "release-gate.yml").read_text())
    (job,) = workflow["jobs"].values()
    return [{**workflow["env"], **s} for s in job["steps"] if "run" in s]


def test_the_history_ci_example_runs_its_workflow_steps_from_the_installed_wheel(
    installed: Path, tmp_path: Path, user_env, bundled_model_dir: Path
):
    import yaml

    project = tmp_path / "project"  # examples/history_ci copied out of the repository
    shutil.copytree(REPO / "examples" / "history_ci", project, ignore=shutil.ignore_patterns("reports", "history"))
    steps = _workflow_steps(project)
    install, gate, refresh, history = steps
    assert install["run"].startswith("pip install evalsuite")  # the one step this machine cannot run (offline)
    # GitLab runs the same commands
    gitlab = yaml.safe_load((project / ".gitlab-ci.yml").read_text())["release-gate"]
    assert gitlab["before_script"] == [install["run"]]
    assert gitlab["script"][0] == gate["run"] and refresh["run"] in gitlab["script"][1]
    assert gitlab["after_script"] == [history["run"]]

    env = {k: str(v) for k, v in gate.items() if k.isupper()}
    (project / env["MODEL_DIR"]).parent.mkdir(parents=True)
    (project / env["MODEL_DIR"]).symlink_to(bundled_model_dir)
    summary = tmp_path / "step_summary.md"
    shell = {
        **user_env,
        **env,
        "PATH": f"{installed}{os.pathsep}{user_env['PATH']}",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_SHA": "c0ffee" + "0" * 34,
    }

    def step(s: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return _sh(["bash", "-eo", "pipefail", "-c", s["run"]], project, shell)

    first = step(refresh)  # the first release: its baseline (and its record)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    for s in (gate, refresh, history):  # the workflow on main: gate, refresh, show
        done = step(s)
        assert done.returncode == 0, f"{s['name']}: " + done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"^\s+PASS\s+ndcg@10:max_drop_from_first=0\.02: ", done.stdout, re.M) is None  # history step
    assert re.search(r"^  1\s+[0-9a-f]{12}\s.*PASS\s+ndcg@10:max_drop=0\.01 pass; ", done.stdout, re.M), done.stdout
    assert (project / "reports" / "history.html").is_file()
    text = summary.read_text()
    assert text.startswith("### evalsuite: PASS") and "`ndcg@10:max_drop_from_first=0.02` | PASS" in text
    (record,) = (project / "history").rglob("*.json")
    assert '"commit": "c0ffee' in record.read_text() and '"commit_source": "GITHUB_SHA"' in record.read_text()


def test_model_families_run_and_sweep_from_the_installed_wheel(installed: Path, tmp_path: Path, user_env):
    """A decoder (last token, EOS, left padding, a query instruction), an XLM-R with `query: `/`passage: ` prompts and a
    model with Dense heads, each saved as a sentence-transformers directory, run and sweep from the wheel."""
    make = (
        "import sys; from pathlib import Path; from evalsuite.testing.tiny_families import write_family; "
        "[write_family(n, Path(sys.argv[1]) / n) for n in ('qwen3', 'xlmr', 'dense')]"
    )
    _ok([installed / "python", "-c", make, tmp_path / "models"], cwd=tmp_path, env=user_env)
    for name, pooling in (("qwen3", "last"), ("xlmr", "mean"), ("dense", "mean")):
        model = tmp_path / "models" / name
        out = _ok(
            [
                installed / "evalsuite",
                "run",
                "--model",
                model,
                "--device",
                "cpu",
                "--no-cache",
                "--out",
                tmp_path / name,
            ],
            cwd=tmp_path,
            env=user_env,
        )
        results = json.loads((tmp_path / name / "results.json").read_text())
        assert results["manifest"]["contract"]["pooling"] == pooling, out
        assert 0.0 <= results["metrics"]["ndcg@10"] <= 1.0
    decoder = tmp_path / "models" / "qwen3"
    argv = [installed / "evalsuite", "sweep", "--model", decoder, "--device", "cpu", "--no-cache"]
    out = _ok([*argv, "--vary", "pooling=last,mean", "--out", tmp_path / "sweep"], cwd=tmp_path, env=user_env)
    assert re.search(r"^\s+pooling=mean\s+\d", out, re.M), out


_INGEST = """
import sys
from pathlib import Path

import faiss
import numpy as np

from evalsuite.encode.contract_encoder import ContractEncoder
from evalsuite.run.pipeline import make_encoder, prepare
from evalsuite.run.spec import RunSpec

root = Path(sys.argv[1])
prepared = prepare(RunSpec(dataset="bundled", device="cpu", use_cache=False))
ids = list(prepared.dataset.doc_ids)
vectors = ContractEncoder(make_encoder(prepared), prepared.contract).embed_documents(
    [prepared.dataset.corpus[i] for i in ids]
)
for name, rows in (("faithful", vectors), ("shifted", np.vstack([vectors[:32], vectors[33:65], vectors[32:33], vectors[65:]]))):
    index = faiss.IndexFlatIP(rows.shape[1])
    index.add(np.ascontiguousarray(rows, dtype=np.float32))
    faiss.write_index(index, str(root / f"{name}.faiss"))
(root / "ids.txt").write_text("\\n".join(ids) + "\\n")
"""


def test_an_index_is_audited_from_the_installed_wheel(installed: Path, tmp_path: Path, user_env):
    """`evalsuite audit` and the plugin's `--index` items from the wheel: a faithful FAISS file passes, one whose
    second batch of 32 is shifted by one fails naming the mapping fault."""
    _ok([installed / "python", "-c", _INGEST, tmp_path], cwd=tmp_path, env=user_env)
    audit = [installed / "evalsuite", "audit", "--ids", tmp_path / "ids.txt", "--device", "cpu"]
    _ok(
        [*audit, "--index", f"faiss:{tmp_path / 'faithful.faiss'}", "--out", tmp_path / "a"], cwd=tmp_path, env=user_env
    )
    shifted = _sh(
        [*audit, "--index", f"faiss:{tmp_path / 'shifted.faiss'}", "--out", tmp_path / "b"], tmp_path, user_env
    )
    assert shifted.returncode == 1, shifted.stdout[-3000:] + shifted.stderr[-2000:]
    assert "mapping fault" in shifted.stdout or "shifted" in shifted.stdout, shifted.stdout[-3000:]
    rev = _ok([installed / "evalsuite", "model-rev"], cwd=tmp_path, env=user_env).strip()
    empty = tmp_path / "project"
    empty.mkdir()
    items = [installed / "python", "-m", "pytest", "-v", "-p", "no:randomly", "-p", "no:xdist", "--model-rev", rev]
    items += [
        "--audit-index",
        f"faiss:{tmp_path / 'faithful.faiss'}",
        "--ids",
        str(tmp_path / "ids.txt"),
        "-k",
        "audit",
    ]
    proc = _sh(items, empty, user_env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert re.search(r"audit\[fidelity\] PASSED", proc.stdout), proc.stdout[-3000:]


@pytest.mark.parametrize("family", ["qwen3", "xlmr", "dense"])
def test_a_family_canary_from_the_installed_wheel(
    installed: Path, tmp_path: Path, user_env, small_beir: Path, family: str
):
    """The wheel's `evalsuite canary` against each family served by a loopback server that runs the reference's own
    model (the decoder pooling its last token, the XLM-R with its prompts sent by the client, the Dense heads applied):
    faithful passes; the same server pooling otherwise fails, the cause named."""
    from evalsuite.encode.local import LocalEncoder
    from evalsuite.model import resolve_model
    from evalsuite.testing.tiny_families import write_family
    from tests.canary.fault_server import serving

    model = write_family(family, tmp_path / family)
    info = resolve_model(str(model))
    encoders: dict[int, LocalEncoder] = {}

    def encoder(max_length: int) -> LocalEncoder:
        if max_length not in encoders:
            encoders[max_length] = LocalEncoder(info, device="cpu", max_length=max_length, progress=False)
        return encoders[max_length]

    pooling, other = ("last", "mean") if family == "qwen3" else ("mean", "cls")
    with serving(encoder, info.hidden_size, info.default_max_length) as server:
        server.pooling = pooling
        argv = [installed / "evalsuite", "canary", "--endpoint", server.url, "--model", model, "--device", "cpu"]
        argv += ["--dataset", small_beir, "--no-cache", "--metrics", "ndcg@10,recall@10"]
        faithful = _sh([*argv, "--out", tmp_path / "faithful"], tmp_path, user_env)
        assert faithful.returncode == 0, faithful.stdout[-4000:] + faithful.stderr[-2000:]
        server.pooling = other
        departed = _sh([*argv, "--out", tmp_path / other, "--canary-detect", "0.5"], tmp_path, user_env)
    assert departed.returncode == 1, departed.stdout[-4000:] + departed.stderr[-2000:]
    cause = f"the server pools with {other.upper()} (the contract's: {pooling})"
    assert cause in departed.stdout, departed.stdout[-4000:]


def _demo_plugin_source(root: Path) -> Path:
    """The demo plug-in of docs/ARCHITECTURE.md (its whole source and entry points, read from the page) as a
    package directory pip can install: its pyproject.toml, its one module."""
    source, entry_points = demo_plugin()
    (root / "evalsuite_demo_plugin").mkdir(parents=True)
    (root / "evalsuite_demo_plugin" / "__init__.py").write_text(source, encoding="utf-8")
    head = (
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "evalsuite-demo-plugin"\nversion = "0.1.0"\ndependencies = ["evalsuite"]\n\n'
        '[tool.setuptools]\npackages = ["evalsuite_demo_plugin"]\n\n'
    )
    (root / "pyproject.toml").write_text(head + entry_points, encoding="utf-8")
    return root


def test_a_plugin_package_pip_installed_beside_the_wheel_adds_its_store_check_gate_kind_and_job(
    built: Built, tmp_path: Path, user_env, tiny_model_dir: Path, small_beir: Path
):
    """A user's venv: the wheel, then the demo plug-in installed by pip from its own package directory (no
    sys.path or dist-info made by hand): its store is in `evalsuite audit --help` and audits an index, its audit
    check is among the verdicts, its gate kind judges a gated pytest run, its job is in `evalsuite --help` and runs
    with its declared exit statuses."""
    python = _fresh_venv(tmp_path / "venv")
    bin_dir = python.parent
    _ok(_pip("--python", python, "install", "--no-deps", "--no-index", "--quiet", built.wheel), cwd=tmp_path)
    plugin = _demo_plugin_source(tmp_path / "demo-plugin")
    offline = ("install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet")
    _ok(_pip("--python", python, *offline, plugin), cwd=tmp_path)
    listed = _ok(_pip("--python", python, "list", "--format", "json"), cwd=tmp_path)
    assert {"evalsuite", "evalsuite-demo-plugin"} <= {d["name"] for d in json.loads(listed)}

    help_text = " ".join(_ok([bin_dir / "evalsuite", "audit", "--help"], tmp_path, user_env).split())
    assert "npy:... (npy, a plug-in: DIR/vectors.npy and DIR/ids.txt)" in help_text
    top_help = " ".join(_ok([bin_dir / "evalsuite", "--help"], tmp_path, user_env).split())
    assert "demo-hello say hello (the demo plug-in's job)" in top_help
    hello = _sh([bin_dir / "evalsuite", "demo-hello", "--name", "Ada"], tmp_path, user_env)
    assert (hello.returncode, hello.stdout) == (0, "hello, Ada, from the demo plug-in\n"), hello.stderr[-2000:]
    blank = _sh([bin_dir / "evalsuite", "demo-hello", "--name", ""], tmp_path, user_env)
    assert (blank.returncode, blank.stdout) == (1, ""), blank.stderr[-2000:]
    index = tmp_path / "index"
    write = (
        "import sys, numpy as np, evalsuite; from pathlib import Path\n"
        "run = evalsuite.evaluate(sys.argv[1], sys.argv[2], device='cpu', use_cache=False)\n"
        "out = Path(sys.argv[3]); out.mkdir()\n"
        "np.save(out / 'vectors.npy', np.ascontiguousarray(run.result.doc_vectors, dtype=np.float32))\n"
        "(out / 'ids.txt').write_text('\\n'.join(run.result.dataset.doc_ids) + '\\n')\n"
    )
    _ok([python, "-c", write, tiny_model_dir, small_beir, index], tmp_path, user_env)
    model = ["--model", str(tiny_model_dir), "--dataset", str(small_beir), "--device", "cpu", "--no-cache"]
    audit = _sh(
        [bin_dir / "evalsuite", "audit", *model, "--index", f"npy:{index}", "--out", tmp_path / "a"], tmp_path, user_env
    )
    assert audit.returncode == 0, audit.stdout[-3000:] + audit.stderr[-2000:]
    report = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert report["index"]["index"]["store"] == "npy" and report["passed"] is True
    last = report["index"]["verdicts"][-1]  # the plug-in's check, after the built-in ones
    assert (last["check"], last["status"]) == ("rows", "PASS"), last

    project = tmp_path / "project"
    project.mkdir()
    rev = _ok([bin_dir / "evalsuite", "model-rev", str(tiny_model_dir)], project, user_env).strip()
    gated = [
        python,
        "-m",
        "pytest",
        "-p",
        "no:randomly",
        "-p",
        "no:xdist",
        "-p",
        "no:cacheprovider",
        "--model-rev",
        rev,
    ]
    gated += [*model, "--gate", "ndcg@10:at_least=0.0", "--gate", "ndcg@10:at_least=1.5"]
    proc = _sh(gated, project, user_env)
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "is below 1.5 (at_least)" in proc.stdout and "1 failed, 3 passed" in proc.stdout, proc.stdout[-4000:]
