"""Bad paths and options of `evalsuite run`, `sweep` and `canary`: exit 2, one line naming the path and
what to do, no traceback, checked before any model is loaded or anything encoded.

Tests run as root here, where a chmod'ed directory stops nothing: unwritable places are made with a
path under a regular file, and with `/proc` (no file can be created there, not even by root); one
test uses real permissions, made to hold for root too (tests/privileges.py: an immutable directory).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.cli import main
from tests.privileges import read_only_dir

COMMANDS = {
    "run": ["run"],
    "sweep": ["sweep", "--vary", "pooling=cls,mean"],
    "canary": ["canary", "--endpoint", "http://127.0.0.1:9/v1"],
}


@pytest.fixture
def no_model(monkeypatch):
    """Fault injection: loading the local model (the first step of encoding) fails the test."""
    import evalsuite.encode.local as local

    calls: list[object] = []

    def forbidden(self, *a, **k):
        calls.append(a)
        raise AssertionError("the model was loaded although the command had to stop before encoding")

    monkeypatch.setattr(local.LocalEncoder, "__init__", forbidden)
    return calls


def _run(argv, capsys):
    rc = main(argv)
    captured = capsys.readouterr()
    return rc, captured.err


def _one_line_error(rc, err, *needles):
    assert rc == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("evalsuite: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, err)
    return lines[0]


@pytest.fixture
def base(tiny_model_dir, small_beir):
    return ["--model", str(tiny_model_dir), "--dataset", str(small_beir), "--device", "cpu"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_out_naming_an_existing_file(command, base, tmp_path, capsys, no_model):
    target = tmp_path / "report.txt"
    target.write_text("keep me")
    rc, err = _run([*COMMANDS[command], *base, "--no-cache", "--out", str(target)], capsys)
    _one_line_error(rc, err, f"--out {target}", "not a directory", "pass --out a directory you can write")
    assert target.read_text() == "keep me" and not no_model


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_out_that_cannot_be_created(command, base, tmp_path, capsys, no_model):
    blocker = tmp_path / "file"
    blocker.write_text("")
    rc, err = _run([*COMMANDS[command], *base, "--no-cache", "--out", str(blocker / "a" / "b")], capsys)
    _one_line_error(rc, err, f"--out {blocker / 'a' / 'b'}", f"{blocker} is a file")
    rc, err = _run([*COMMANDS[command], *base, "--no-cache", "--out", "/proc/evalsuite-out"], capsys)
    _one_line_error(rc, err, "--out /proc/evalsuite-out", "/proc is not writable")
    assert not no_model


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_cache_dir_a_file_or_unwritable(command, base, tmp_path, capsys, no_model):
    blocker = tmp_path / "cache-file"
    blocker.write_text("")
    out = tmp_path / "out"
    for cache, needle in (
        (blocker, "exists and is not a directory"),
        (blocker / "sub", f"{blocker} is a file"),
        (Path("/proc/evalsuite-cache"), "/proc is not writable"),
    ):
        rc, err = _run([*COMMANDS[command], *base, "--cache-dir", str(cache), "--out", str(out)], capsys)
        _one_line_error(rc, err, f"(--cache-dir) {cache}", needle, "or --no-cache")
    assert not out.exists() and not no_model


def test_env_cache_dir_is_named(base, tmp_path, capsys, no_model, monkeypatch):
    blocker = tmp_path / "cache-file"
    blocker.write_text("")
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(blocker))
    rc, err = _run(["run", *base, "--out", str(tmp_path / "out")], capsys)
    _one_line_error(rc, err, "$EVALSUITE_CACHE_DIR", str(blocker))


def test_no_cache_skips_the_cache_check(base, tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "cache-file"
    blocker.write_text("")
    rc, err = _run(
        ["run", *base, "--cache-dir", str(blocker / "sub"), "--no-cache", "--out", str(tmp_path / "o")], capsys
    )
    assert rc == 0, err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_qrels_missing_or_a_directory(command, base, tmp_path, capsys, no_model):
    for qrels, needle in ((tmp_path / "nope.tsv", "qrels file not found"), (tmp_path, "--qrels names a directory")):
        rc, err = _run(
            [*COMMANDS[command], *base, "--no-cache", "--qrels", str(qrels), "--out", str(tmp_path / "out")], capsys
        )
        _one_line_error(rc, err, str(qrels), needle)
    assert not no_model


def test_read_only_directory_real_permissions(base, tmp_path, capsys, no_model):
    with read_only_dir(tmp_path / "ro") as ro:  # immutable for root (chattr +i), mode 0o500 for others
        rc, err = _run(["run", *base, "--no-cache", "--out", str(ro / "out")], capsys)
        _one_line_error(rc, err, f"--out {ro / 'out'}", f"{ro} is not writable")
        rc, err = _run(["run", *base, "--cache-dir", str(ro), "--out", str(tmp_path / "out")], capsys)
        _one_line_error(rc, err, f"(--cache-dir) {ro}", "is not writable")


def test_existing_out_directory_is_fine_and_reports_follow_the_umask(base, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    old = os.umask(0o027)
    try:
        rc, err = _run(["run", *base, "--no-cache", "--out", str(out / "deeper")], capsys)
    finally:
        os.umask(old)
    assert rc == 0, err
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (out / "deeper").iterdir()}
    assert modes == dict.fromkeys(["manifest.json", "report.md", "results.json", "run.trec"], 0o640)
    assert stat.S_IMODE((out / "deeper").stat().st_mode) == 0o750
    assert not list(out.rglob(".evalsuite-probe-*"))  # the writability probe leaves nothing behind


def test_subprocess_prints_one_line_and_no_traceback(base, tmp_path):
    target = tmp_path / "file"
    target.write_text("")
    proc = subprocess.run(
        [sys.executable, "-m", "evalsuite.cli", "run", *base, "--no-cache", "--out", str(target)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"evalsuite: error: --out {target}: exists and is not a directory; "
        "pass --out a directory you can write (it is created if missing)"
    ]


def test_unforeseen_os_error_is_one_line(base, tmp_path, capsys, monkeypatch):
    """A file-system failure past the preflight (a race, a full disk) ends in one line, not a traceback."""
    import evalsuite.reports as reports

    def full_disk(result, out):
        raise OSError(28, "No space left on device", str(out / "results.json"))

    monkeypatch.setattr(reports, "write_run_reports", full_disk)
    rc, err = _run(["run", *base, "--no-cache", "--out", str(tmp_path / "out")], capsys)
    _one_line_error(rc, err, str(tmp_path / "out" / "results.json"), "No space left on device")


def test_report_file_blocked_by_a_directory_names_the_file(base, tmp_path, capsys):
    blocked = tmp_path / "out" / "results.json"
    blocked.mkdir(parents=True)
    rc, err = _run(["run", *base, "--no-cache", "--out", str(tmp_path / "out")], capsys)
    _one_line_error(rc, err, f"evalsuite: error: {blocked}: Is a directory")
