"""The ``evalsuite`` process ends through ``cli.end``: every exit-time duty done (non-daemon threads joined, atexit
handlers and ``weakref.finalize`` run, output flushed into a pipe), the status kept, the interpreter's teardown
skipped. Real subprocesses: the behaviour is what a shell sees."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ENDING = textwrap.dedent(
    """
    import atexit, sys, tempfile, threading, time, weakref
    from pathlib import Path

    from evalsuite.cli import end

    out = Path(sys.argv[1])
    atexit.register(lambda: (out / "atexit").write_text("ran"))

    class Owner:
        pass

    owner = Owner()
    weakref.finalize(owner, lambda: (out / "finalized").write_text("ran"))

    def late():
        time.sleep(0.5)
        (out / "thread").write_text("done")

    threading.Thread(target=late).start()
    print("a line left in the buffer", end="")
    sys.stderr.write("and one on stderr")
    end(int(sys.argv[2]))
    raise SystemExit("end() returned")
    """
)


# a user's shell: output to a pipe is block-buffered (this machine's shells set PYTHONUNBUFFERED)
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


@pytest.mark.parametrize("status", [0, 1, 3])
def test_end_keeps_the_status_and_does_every_exit_duty(tmp_path: Path, status: int):
    proc = subprocess.run(
        [sys.executable, "-c", ENDING, str(tmp_path), str(status)],
        capture_output=True,
        text=True,
        timeout=120,
        env=BUFFERED,
    )
    assert proc.returncode == status, proc.stderr
    assert proc.stdout == "a line left in the buffer"  # flushed into the pipe
    assert proc.stderr == "and one on stderr"
    assert (tmp_path / "thread").read_text() == "done"  # the non-daemon thread joined before the end
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "finalized").read_text() == "ran"


def test_python_m_evalsuite_prints_into_a_pipe_and_exits_with_the_jobs_status(tmp_path: Path):
    rev = subprocess.run(
        [sys.executable, "-m", "evalsuite", "model-rev"], capture_output=True, text=True, timeout=300, env=BUFFERED
    )
    assert rev.returncode == 0, rev.stderr
    assert len(rev.stdout.strip()) >= 7, rev.stdout  # the bundled model's revision, flushed before the end
    missing = tmp_path / "no-such-dataset"
    bad = subprocess.run(
        [sys.executable, "-m", "evalsuite", "run", "--dataset", str(missing), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        env=BUFFERED,
    )
    assert bad.returncode == 2, bad.stderr
    assert str(missing) in bad.stderr and bad.stderr.startswith("evalsuite: error:"), bad.stderr


def test_the_console_script_is_the_ending_entry():
    import tomllib

    root = Path(__file__).resolve().parents[2]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"evalsuite": "evalsuite.cli:entry"}
    assert "entry()" in (root / "evalsuite" / "__main__.py").read_text()
