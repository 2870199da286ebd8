"""`evalsuite verify`: a deployment (the loopback fault server, real HTTP, vectors of the real tiny
reference) against the manifest a real `evalsuite run` wrote. Here beside the canary: it shares its
fault server and dataset.

One-line bugs caught: no fingerprint written by `run`, the vectors compared at the wrong rows or
prefixes, norms not checked, the server's max length ignored, an old manifest read as a mismatch
instead of a usage error, a heavy import on the verify path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.testing.builders import run_argv


@pytest.fixture(scope="module")
def manifest(tmp_path_factory, tiny_model_dir, canary_dataset) -> Path:
    out = tmp_path_factory.mktemp("verify-run")
    rc = main(run_argv(str(tiny_model_dir), str(canary_dataset), "--out", str(out)))
    assert rc == 0
    return out / "manifest.json"


@pytest.fixture
def named_server(fault_server, tiny_info):
    """The fault server serving the tiny model under its pinned name."""
    fault_server.model = fault_server.listed[0] = tiny_info.name
    return fault_server


def verify(manifest, url, *extra):
    return main(["verify", "--manifest", str(manifest), "--endpoint", url, *extra])


def test_run_writes_a_small_fingerprint(manifest):
    fp = json.loads(manifest.read_text())["fingerprint"]
    assert fp["version"] == 1 and fp["dim"] == 32
    assert [p["role"] for p in fp["probes"]] == ["query"] * 4 + ["document"] * 4
    assert len(json.dumps(fp)) < 4000


def test_faithful_server_matches(manifest, named_server, capsys):
    assert verify(manifest, named_server.url) == 0
    out = capsys.readouterr().out
    assert "PASS  vectors: 8 probe texts, min cosine 1.0000" in out
    assert out.rstrip().endswith(f"match: {named_server.url} against {manifest}")


def test_cls_server_mismatches(manifest, named_server, capsys):
    named_server.pooling = "cls"
    assert verify(manifest, named_server.url) == 1
    out = capsys.readouterr().out
    assert "FAIL  vectors: min cosine" in out
    assert "MISMATCH: vectors" in out


def test_unnormalized_server_mismatches_on_norms(manifest, named_server, capsys):
    named_server.normalize = False
    assert verify(manifest, named_server.url) == 1
    out = capsys.readouterr().out
    assert "FAIL  norm: served norms" in out and "expected 1 (the contract normalizes)" in out
    # equal directions, other norms: named even though no alternative derived from unit vectors has those norms
    assert "every direction matches" in out and "cause: the server does not normalize the vectors" in out, out


def test_float16_rounding_is_named_without_the_model(manifest, named_server, capsys):
    named_server.rounding = "float16"
    assert verify(manifest, named_server.url, "--min-cosine", "0.999999999") == 1
    out = capsys.readouterr().out
    assert "cause: the served vectors are rounded to float16" in out


def test_other_name_and_max_length_are_mismatches(manifest, fault_server, capsys):
    fault_server.model_extra = {"owned_by": "vllm", "max_model_len": 40}
    assert verify(manifest, fault_server.url) == 1
    out = capsys.readouterr().out
    assert "FAIL  model: the server serves 'tiny-model'" in out
    assert "FAIL  max length: the server's is 40 tokens, the contract's 64" in out


def test_manifest_without_fingerprint_is_a_usage_error(manifest, named_server, tmp_path, capsys):
    old = json.loads(manifest.read_text())
    del old["fingerprint"]
    (tmp_path / "manifest.json").write_text(json.dumps(old))
    assert verify(tmp_path / "manifest.json", named_server.url) == 2
    assert "has no fingerprint" in capsys.readouterr().err


def test_verify_imports_no_model_search_or_metric_library(manifest, named_server):
    code = (
        "import sys\n"
        "from evalsuite.cli import main\n"
        f"rc = main(['verify', '--manifest', {str(manifest)!r}, '--endpoint', {named_server.url!r}])\n"
        "heavy = sorted(m for m in ('torch', 'faiss', 'ranx', 'transformers', 'numba') if m in sys.modules)\n"
        "print('RESULT', rc, heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert "RESULT 0 []" in proc.stdout, proc.stdout + proc.stderr


def test_the_served_name_matches_as_the_canary_matches_it():
    """vLLM serves `--served-model-name all-MiniLM-L6-v2` for the pinned `sentence-transformers/all-MiniLM-L6-v2`:
    the same path tail is the same model (the canary's rule), another name is not."""
    from types import SimpleNamespace

    from evalsuite.verify.checks import check_model

    m = SimpleNamespace(model_names=("sentence-transformers/all-MiniLM-L6-v2",))
    assert check_model("all-MiniLM-L6-v2", m, None).passed  # type: ignore[arg-type]
    assert check_model("/models/sentence-transformers/all-MiniLM-L6-v2", m, None).passed  # type: ignore[arg-type]
    assert not check_model("all-mpnet-base-v2", m, None).passed  # type: ignore[arg-type]
    assert not check_model("MiniLM-L6-v2", m, None).passed  # type: ignore[arg-type]
