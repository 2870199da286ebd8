"""Unwritable and unreadable places that hold for root too, so permission tests run where CI runs (as root).

- :func:`read_only_dir`: as an ordinary user, ``chmod 0o500``; as root (whom no mode stops), the directory made
  immutable with ``chattr +i`` (root cannot create anything in it: ``EPERM``), undone at the end.
- :func:`as_user`: a function run in a forked child that dropped root for ``nobody``, its result (or the text of
  the exception it raised) sent back: an unreadable file is unreadable to that child.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

NOBODY = 65534


@contextlib.contextmanager
def read_only_dir(path: Path) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        path.chmod(stat.S_IRUSR | stat.S_IXUSR)
        try:
            yield path
        finally:
            path.chmod(stat.S_IRWXU)
        return
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"chattr +i {path} failed ({done.stderr.strip()}): this test needs a file system with attributes")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def as_user(fn: Callable[[], Any], uid: int = NOBODY) -> tuple[str, Any]:
    """``("ok", value)`` or ``("raised", "TypeName: message")`` of ``fn()`` run as ``uid`` (root only drops to it;
    an ordinary user runs it as itself)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            try:
                out: tuple[str, Any] = ("ok", fn())
            except BaseException as exc:
                out = ("raised", f"{type(exc).__name__}: {exc}")
            with os.fdopen(write, "wb") as fh:
                pickle.dump(out, fh)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    result: tuple[str, Any] = pickle.loads(data)
    return result
