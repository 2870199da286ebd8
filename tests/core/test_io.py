"""Atomic writes keep their atomicity and give files the umask's mode (not mkstemp's 0600)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from evalsuite.base.io import atomic_write_bytes, atomic_write_json, current_umask
from evalsuite.encode.cache import EmbeddingCache, ShardKey


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.fixture
def umask():
    old = os.umask(0o022)
    os.umask(old)

    def set_to(mask: int) -> None:
        os.umask(mask)

    yield set_to
    os.umask(old)


@pytest.mark.parametrize(
    ("mask", "file_mode", "dir_mode"),
    [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700), (0o002, 0o664, 0o775), (0o027, 0o640, 0o750)],
)
def test_files_and_directories_follow_the_umask(tmp_path, umask, mask, file_mode, dir_mode):
    umask(mask)
    assert current_umask() == mask
    target = atomic_write_json(tmp_path / "a" / "b" / "results.json", {"x": 1})
    # the oracle: what a plain open()/mkdir() gives under the same umask
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "f").write_text("")
    assert _mode(target) == _mode(plain / "f") == file_mode
    assert _mode(tmp_path / "a") == _mode(tmp_path / "a" / "b") == _mode(plain) == dir_mode


def test_replacing_keeps_atomicity_and_takes_the_umask_mode(tmp_path, umask):
    umask(0o077)
    target = atomic_write_bytes(tmp_path / "f.bin", b"old")
    assert _mode(target) == 0o600
    umask(0o022)
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new" and _mode(target) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]  # no temporary file left behind


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, umask, monkeypatch):
    umask(0o022)
    target = atomic_write_bytes(tmp_path / "f.bin", b"old")

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


def test_cache_segments_and_baselines_follow_the_umask(tmp_path, umask):
    umask(0o022)
    cache = EmbeddingCache(tmp_path / "cache")
    key = ShardKey("r" * 40, "t" * 40, "float32", 64, "truncate", "mean", "document", 4)
    cache.store(key, [b"\x01" * 16, b"\x02" * 16], np.ones((2, 4), dtype=np.float32))
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    dirs = [p for p in (tmp_path / "cache").rglob("*") if p.is_dir()]
    assert {p.suffix for p in files} == {".json", ".seg"}
    assert {_mode(p) for p in files} == {0o644} and {_mode(p) for p in dirs} == {0o755}
    vectors, found = cache.lookup(key, [b"\x01" * 16, b"\x03" * 16])
    assert found.tolist() == [True, False] and vectors[0].tolist() == [1.0] * 4


def test_umask_is_read_without_being_changed(umask):
    umask(0o037)
    assert current_umask() == 0o037
    assert current_umask() == 0o037
