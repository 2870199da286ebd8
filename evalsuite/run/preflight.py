"""Checks of every path a command will write, made before anything is encoded (a gated session's
gates against its metrics: :mod:`evalsuite.gating.preflight`): a bad ``--out``, cache directory, baseline or reports directory is a usage
error (exit 2 / pytest's usage error) naming the path and what to do, not a traceback after the
whole evaluation ran.

A directory is writable when it exists as a directory, or can be created under its nearest
existing ancestor, and a file can be created there now (probed with a temporary file that is
removed at once, so root, read-only mounts, ACLs and pseudo file systems answer truthfully).
Nothing here creates the directories themselves.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import SpecError

if TYPE_CHECKING:
    from .spec import RunSpec


def _nearest_existing(path: Path) -> Path:
    p = path
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return p


def _probe(directory: Path) -> str | None:
    """None when a file can be created in ``directory`` now, else the OS's reason."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".evalsuite-probe-", dir=directory)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)
    return None


def dir_problem(path: Path) -> str | None:
    """Why ``path`` cannot be (made) a directory this process writes into, or None when it can."""
    if os.path.lexists(path) and not path.is_dir():
        return "exists and is not a directory"
    anchor = _nearest_existing(path.absolute())
    if not anchor.is_dir():
        return f"cannot be created because {anchor} is a file, not a directory"
    reason = _probe(anchor)
    if reason is None:
        return None
    if anchor == path.absolute():
        return f"is not writable ({reason})"
    return f"cannot be created: {anchor} is not writable ({reason})"


def check_writable_dir(path: str | os.PathLike[str], what: str, hint: str) -> Path:
    """``path`` is (or can be made) a directory this process writes into; raises SpecError naming
    ``what`` (e.g. ``--out``) and the path, with ``hint`` saying what to do. Returns the path."""
    target = Path(path).expanduser()
    problem = dir_problem(target)
    if problem is not None:
        raise SpecError(f"{what} {target}: {problem}; {hint}")
    return target


def check_writable_file(path: str | os.PathLike[str], what: str, hint: str) -> Path:
    """``path`` can be written (atomically: a temporary file in its directory, then a rename)."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise SpecError(f"{what} {target}: is a directory; name a file, {hint}")
    problem = dir_problem(target.parent)
    if problem is not None:
        raise SpecError(f"{what} {target}: cannot be written, its directory {target.parent} {problem}; {hint}")
    return target


def out_dir(path: str | os.PathLike[str], option: str = "--out") -> Path:
    """A report directory named by ``--out`` (or the command's default for it)."""
    return check_writable_dir(path, option, f"pass {option} a directory you can write (it is created if missing)")


def cache_dir(spec: RunSpec) -> Path | None:
    """The embedding cache directory the spec will use (None with ``--no-cache``), checked."""
    if not spec.use_cache:
        return None
    from ..encode.cache import ENV_DIR, default_cache_dir

    if spec.cache_dir:
        where, root = "--cache-dir", Path(spec.cache_dir)
    else:
        root = default_cache_dir()
        where = f"${ENV_DIR}" if os.environ.get(ENV_DIR) else "the default cache directory"
    return check_writable_dir(
        root, f"embedding cache ({where})", "pass --cache-dir a directory you can write, or --no-cache"
    )


def run_paths(spec: RunSpec, out: Path | None, option: str = "--out") -> None:
    """What `evalsuite run`, `sweep` and `canary` write: the report directory (when known) and the cache."""
    if out is not None:
        out_dir(out, option)
    cache_dir(spec)
