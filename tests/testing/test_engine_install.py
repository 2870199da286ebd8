"""Engine venvs installing in the background (`.ci/background.sh`, `scripts/bootstrap.sh --test --no-wait`): the
state a test reads while it waits, and every way the wait ends (done, failed, process gone, timed out)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.testing.engine_install import (
    WAIT_ENV,
    InstallFailed,
    InstallTimeout,
    await_install,
    main,
    wait_limit,
)

REPO = Path(__file__).resolve().parents[2]
BACKGROUND = REPO / ".ci" / "background.sh"


def background(state: Path, name: str, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(BACKGROUND), str(state), name, "bash", "-c", script], capture_output=True, text=True, timeout=60
    )


def test_a_successful_install_leaves_only_its_log(tmp_path):
    done = background(tmp_path, "infinity", "echo installed")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["infinity.log"]
    assert (tmp_path / "infinity.log").read_text() == "installed\n"
    assert await_install(tmp_path, "infinity", wait_s=0) == pytest.approx(0, abs=1)


def test_a_failed_install_is_named_with_its_log_and_its_status(tmp_path):
    done = background(tmp_path, "llamacpp", "echo 'cmake: no compiler'; exit 3")
    assert done.returncode == 3
    assert (tmp_path / "llamacpp.failed").exists() and not (tmp_path / "llamacpp.pending").exists()
    with pytest.raises(InstallFailed, match="the llamacpp engine venv failed to install") as raised:
        await_install(tmp_path, "llamacpp", wait_s=0)
    assert "cmake: no compiler" in str(raised.value) and "exit 3" in str(raised.value)
    # a new install of the same engine starts from a clean state
    assert background(tmp_path, "llamacpp", "true").returncode == 0
    assert not (tmp_path / "llamacpp.failed").exists()
    assert await_install(tmp_path, "llamacpp", wait_s=0) == pytest.approx(0, abs=1)


def test_a_running_install_is_waited_for_until_it_is_done(tmp_path):
    proc = subprocess.Popen(
        ["bash", str(BACKGROUND), str(tmp_path), "vllm", "bash", "-c", "sleep 1; echo finished"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not (tmp_path / "vllm.pending").exists():  # the launcher writes its mark at once
            assert proc.poll() is None
        await_install(tmp_path, "vllm", wait_s=60, poll_s=0.05)
        assert (tmp_path / "vllm.log").read_text() == "finished\n"  # returned only once the command had ended
        assert not (tmp_path / "vllm.pending").exists()
    finally:
        proc.wait(timeout=30)


def test_a_mark_written_before_the_launcher_starts_counts_as_running(tmp_path):
    # bootstrap writes "starting" before it spawns the launcher, which then writes its pid
    (tmp_path / "vllm.pending").write_text("starting\n")
    with pytest.raises(InstallTimeout, match="still installing after 0 s"):
        await_install(tmp_path, "vllm", wait_s=0)


def test_an_install_whose_process_is_gone_is_a_failure_not_a_wait(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / "infinity.pending").write_text(f"{gone.pid}\n")
    (tmp_path / "infinity.log").write_text("Collecting infinity-emb\n")
    with pytest.raises(InstallFailed, match=f"pid {gone.pid}\\) stopped without finishing") as raised:
        await_install(tmp_path, "infinity", wait_s=3600)
    assert "Collecting infinity-emb" in str(raised.value)


def test_a_wait_past_the_limit_times_out_with_the_log_and_the_variable_to_raise(tmp_path):
    (tmp_path / "llamacpp.pending").write_text(f"{os.getpid()}\n")  # alive: this process
    (tmp_path / "llamacpp.log").write_text("[57/210] Building CXX object\n")
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    with pytest.raises(InstallTimeout) as raised:
        await_install(tmp_path, "llamacpp", wait_s=5.0, poll_s=2.0, clock=lambda: now[0], sleep=sleep)
    assert slept == [2.0, 2.0, 1.0]  # never past the limit
    message = str(raised.value)
    assert "still installing after 5 s" in message and WAIT_ENV in message and "[57/210]" in message


def test_the_wait_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(WAIT_ENV, raising=False)
    assert wait_limit() == 2700.0
    monkeypatch.setenv(WAIT_ENV, "90")
    assert wait_limit() == 90.0
    for bad in ("soon", "-1"):
        monkeypatch.setenv(WAIT_ENV, bad)
        with pytest.raises(ValueError, match=WAIT_ENV):
            wait_limit()


def test_the_command_line_waits_for_each_engine_and_fails_on_a_failed_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    state = tmp_path / ".engine-installs"
    assert background(state, "infinity", "true").returncode == 0
    assert background(state, "vllm", "echo no wheel; exit 1").returncode == 1
    assert main(["infinity"]) == 0
    assert main(["infinity", "vllm", "llamacpp"]) == 1
    out, err = capsys.readouterr()
    assert "infinity engine venv: no install pending" in out and "llamacpp engine venv: no install pending" in out
    assert "the vllm engine venv failed to install" in err and "no wheel" in err
    assert main([]) == 2
