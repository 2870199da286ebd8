"""How the pinned model reaches a Ray actor (evalsuite.encode.ray_model), on this process: the shipped files are
written once per node and verified by sha256, a tampered or foreign copy is refused naming the node, a node without
the driver's path is told what to do. (Shipping to a real second node: tests/scale/test_ray_cluster.py.)"""

from __future__ import annotations

import filecmp
import shutil
import tempfile
from pathlib import Path

import pytest

from evalsuite.base.errors import ExecutorError
from evalsuite.encode.ray_model import ModelSource, locate, pack
from evalsuite.model import resolve_model


@pytest.fixture
def node_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The "node's" temporary directory, where shipped models are written."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "node-tmp"))
    (tmp_path / "node-tmp").mkdir()
    return tmp_path / "node-tmp"


def test_a_shipped_model_is_written_once_verified_and_loaded_from_there(tiny_model_dir: Path, node_tmp: Path) -> None:
    info = resolve_model(str(tiny_model_dir))
    source = ModelSource.pin(info, ship=True)
    assert source.mode == "shipped" and source.digest == info.revision
    files = pack(source)
    assert {k.split("/", 1)[0] for k in files} == {"model"}
    got = locate(source, files)
    assert node_tmp in got.root.parents and got.root != info.root
    same = filecmp.dircmp(info.root, got.root)
    assert not same.left_only and not same.right_only and not same.diff_files
    assert got.path == got.root / info.path.relative_to(info.root)
    assert got.tokenizer_path == got.root / info.tokenizer_path.relative_to(info.root)
    assert resolve_model(str(got.root)).revision == info.revision  # an independent read of what was written
    assert locate(source, files).root == got.root  # a second actor of the node reuses the same directory


def test_a_tampered_shipment_is_refused_and_a_good_one_replaces_it(tiny_model_dir: Path, node_tmp: Path) -> None:
    info = resolve_model(str(tiny_model_dir))
    source = ModelSource.pin(info, ship=True)
    files = pack(source)
    weights = next(k for k in files if k.endswith((".safetensors", ".bin")))
    bad = dict(files, **{weights: files[weights][:-1] + bytes([files[weights][-1] ^ 1])})
    with pytest.raises(
        ExecutorError, match=r"node \w+ \(.*\): the model at .* has sha256 \w{16}\.\.\., not the pinned"
    ):
        locate(source, bad)
    assert locate(source, files).root.is_dir()  # the bad copy was not kept as the node's copy


def test_a_node_without_the_drivers_path_or_with_other_files_is_told_what_to_do(
    tiny_model_dir: Path, make_tiny_bert, tmp_path: Path
) -> None:
    moved = shutil.copytree(tiny_model_dir, tmp_path / "model")
    info = resolve_model(str(moved))
    shutil.rmtree(moved)
    with pytest.raises(
        ExecutorError, match=r"cannot read the model at the driver's path .*--ray-ship-model.*--ray-model-path"
    ):
        locate(ModelSource.pin(info))
    other = make_tiny_bert(tmp_path / "other", seed=7)  # the same layout, other weights
    with pytest.raises(ExecutorError, match=r"not the pinned revision's .*\(--ray-model-path\)"):
        locate(ModelSource.pin(info, shared_path=str(other)))
    good = shutil.copytree(tiny_model_dir, tmp_path / "shared")
    assert locate(ModelSource.pin(info, shared_path=str(good))).root == good
    with pytest.raises(ExecutorError, match="exclude each other"):
        ModelSource.pin(info, ship=True, shared_path=str(good))
