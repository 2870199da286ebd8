"""scripts/model_variant.py: the README's broken deployment for a canary fire drill, as evalsuite reads it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.model import resolve_model

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "model_variant.py"


def _variant(src: Path, dest: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(src), str(dest), *flags], capture_output=True, text=True)


@pytest.mark.parametrize("pooling", ["cls", "last", "mean"])
def test_the_copy_declares_the_pooling_asked_for(bundled_model_dir: Path, tmp_path: Path, pooling: str) -> None:
    proc = _variant(bundled_model_dir, tmp_path / "m", "--pooling", pooling)
    assert proc.returncode == 0, proc.stderr
    info = resolve_model(str(tmp_path / "m"))
    assert info.declared_pooling == pooling and info.declared_normalize is True
    assert resolve_model(str(bundled_model_dir)).declared_pooling == "mean"  # the source is untouched


def test_no_normalize_drops_the_normalize_module_only(bundled_model_dir: Path, tmp_path: Path) -> None:
    assert _variant(bundled_model_dir, tmp_path / "m", "--no-normalize").returncode == 0
    info = resolve_model(str(tmp_path / "m"))
    assert info.declared_normalize is False and info.declared_pooling == "mean"


def test_refusals(bundled_model_dir: Path, tmp_path: Path) -> None:
    assert "nothing to change" in _variant(bundled_model_dir, tmp_path / "m").stderr
    (tmp_path / "taken").mkdir()
    assert "exists; pass a new directory" in _variant(bundled_model_dir, tmp_path / "taken", "--pooling", "cls").stderr
    assert "not a sentence-transformers model" in _variant(tmp_path, tmp_path / "x", "--pooling", "cls").stderr
