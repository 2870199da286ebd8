"""Engine venvs still installing beside a test run: wait for one, or say why it will not come.

``scripts/bootstrap.sh --test --no-wait`` (what ``.ci/run`` uses) returns as soon as ``.venv`` is ready while the
engine venvs (``.infinity-venv``, ``.vllm-venv``, ``.llamacpp-venv``: llama-cpp-python compiled from its sdist)
keep installing in the background, so lint, type checks and the tests that need no engine start minutes earlier.
Each background install (``.ci/background.sh``) keeps its state in ``STATE_DIR`` at the repository root:

- ``<name>.pending`` while it runs (holding the pid of the process that runs it),
- ``<name>.failed`` instead when it failed (the same file, moved),
- ``<name>.log`` its output;

nothing is left there but the log when it succeeded. A test that needs an engine calls ``await_install`` first: it
returns at once when no install of that engine is pending (an engine installed earlier, or none at all: the caller
then checks the venv as before) and otherwise waits, raising ``InstallFailed`` (the log's tail in the message) or
``InstallTimeout`` (after ``EVALSUITE_ENGINE_INSTALL_WAIT_S`` seconds, default 45 minutes) rather than hanging.

``python -m evalsuite.testing.engine_install NAME...`` waits for the named installs the same way (exit 1 with the
reason when one failed or timed out); ``.ci/run`` calls it before the steps that need every engine.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

STATE_DIR = ".engine-installs"  # at the repository root (git-ignored)
WAIT_ENV = "EVALSUITE_ENGINE_INSTALL_WAIT_S"
DEFAULT_WAIT_S = 2700.0  # the llama.cpp compile takes up to ~35 minutes on 2 busy cores
LOG_TAIL = 3000


class InstallFailed(RuntimeError):
    """The engine's background install failed or stopped without finishing."""


class InstallTimeout(RuntimeError):
    """The engine's background install is still running after the allowed wait."""


def _alive(pid_text: str) -> bool:
    """Whether the install that wrote ``pid_text`` still runs (anything but a pid: the launcher has not written it
    yet, so it is starting)."""
    try:
        pid = int(pid_text.strip())
    except ValueError:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process of that pid: it exists
        return True
    return True


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return None


def _log_tail(state_dir: Path, name: str) -> str:
    text = _read(state_dir / f"{name}.log")
    return "(no log)" if text is None else text[-LOG_TAIL:]


def wait_limit() -> float:
    raw = os.environ.get(WAIT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{WAIT_ENV}={raw!r} is not a number of seconds") from None
    if value < 0:
        raise ValueError(f"{WAIT_ENV}={raw!r} is negative; give the seconds to wait for an engine install")
    return value


def await_install(
    state_dir: Path,
    name: str,
    *,
    wait_s: float | None = None,
    poll_s: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Wait while ``name``'s background install is pending; the seconds waited. Raises ``InstallFailed`` when it
    failed (or its process is gone without finishing), ``InstallTimeout`` past ``wait_s`` (default: ``wait_limit``)."""
    limit = wait_limit() if wait_s is None else wait_s
    pending, failed = state_dir / f"{name}.pending", state_dir / f"{name}.failed"
    start = clock()
    while True:
        pid_text = _read(pending)
        if pid_text is None:
            if failed.exists():
                raise InstallFailed(
                    f"the {name} engine venv failed to install (log: {state_dir / f'{name}.log'}); "
                    f"its last lines:\n{_log_tail(state_dir, name)}"
                )
            return clock() - start
        if not _alive(pid_text) and pending.exists():
            raise InstallFailed(
                f"the {name} engine venv's install (pid {pid_text.strip()}) stopped without finishing "
                f"({pending} is left; log: {state_dir / f'{name}.log'}); its last lines:\n{_log_tail(state_dir, name)}"
            )
        waited = clock() - start
        if waited >= limit:
            raise InstallTimeout(
                f"the {name} engine venv is still installing after {waited:.0f} s (pid {pid_text.strip()}, log: "
                f"{state_dir / f'{name}.log'}); set {WAIT_ENV} to wait longer. Its last lines:\n"
                f"{_log_tail(state_dir, name)}"
            )
        sleep(min(poll_s, max(limit - waited, 0.0)))


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m evalsuite.testing.engine_install NAME... (waits for their background installs)")
        return 2
    state_dir = Path.cwd() / STATE_DIR
    status = 0
    for name in argv:
        try:
            waited = await_install(state_dir, name)
        except (InstallFailed, InstallTimeout) as exc:
            print(exc, file=sys.stderr)
            status = 1
            continue
        print(f"{name} engine venv: no install pending (waited {waited:.0f} s)")
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
