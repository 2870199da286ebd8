"""Atomic file writes: a reader sees the old file or the new one, never half of one.

Written files get the mode a plain ``open(path, "w")`` would give (``0o666`` less the umask), not
the ``0o600`` of ``mkstemp``, so a CI uploader or report server running as another user can read
reports, baselines and cache segments; directories are created ``0o777`` less the umask.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from pathlib import Path


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux ``/proc``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no /proc: set and restore (not atomic across threads, but restores the value)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)  # mode 0o777, less the umask (mkdir(2) applies it)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~current_umask())  # mkstemp makes 0o600; readers need the usual mode
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def json_text(obj: object) -> str:
    """The text every JSON report is written as (:func:`atomic_write_json`), and what ``to_json()`` returns."""
    return json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def atomic_write_json(path: str | os.PathLike[str], obj: object) -> Path:
    return atomic_write_text(path, json_text(obj))


def path_name(text: str, default: str) -> str:
    """``text`` as one safe path component of a default report directory: each run of characters other than
    letters, digits, ``.``, ``_`` and ``-`` becomes ``-``, none at either end; ``default`` when nothing is left."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or default


def url_host(url: str) -> str:
    """``host:port`` of an http(s) URL (what a default report directory is named after)."""
    return re.sub(r"^https?://", "", url).split("/", 1)[0]


def sha256_file(path: str | os.PathLike[str]) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
