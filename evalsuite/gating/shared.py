"""Compute a value once per session, across pytest-xdist workers.

Without a shared directory (no xdist) a value is memoized in the process. With one, the first
process to ask computes under an exclusive file lock and pickles the value there; the others wait
on the lock and read the pickle. The controller reads what a worker computed with :meth:`peek`.
"""

from __future__ import annotations

import fcntl
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from ..base.io import atomic_write_bytes
from ..base.memo import Memo

T = TypeVar("T")


class ComputeOnce:
    """The session's compute-once memo (:class:`~evalsuite.base.memo.Memo`) over a directory the xdist workers
    share: in-process first, then the pickle another worker wrote."""

    def __init__(self, shared_dir: Path | None = None) -> None:
        self.shared_dir = shared_dir
        self._memo = Memo()

    def get(self, key: str, compute: Callable[[], T]) -> tuple[T, bool]:
        """The value under ``key``, and whether this call computed it."""
        computed = False

        def make() -> T:
            nonlocal computed
            value, computed = self._shared(key, compute)
            return value

        return self._memo.get(key, make), computed

    def _shared(self, key: str, compute: Callable[[], T]) -> tuple[T, bool]:
        if self.shared_dir is None:
            return compute(), True
        self.shared_dir.mkdir(parents=True, exist_ok=True)
        blob = self.shared_dir / f"{key}.pkl"
        with open(self.shared_dir / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if blob.is_file():
                return cast(T, pickle.loads(blob.read_bytes())), False
            value = compute()
            atomic_write_bytes(blob, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            return value, True

    def peek(self, key: str) -> object | None:
        """The value if this process or (under xdist) a worker computed it; never computes."""
        if key in self._memo:
            return self._memo.peek(key)
        if self.shared_dir is not None and (self.shared_dir / f"{key}.pkl").is_file():
            return cast(object, pickle.loads((self.shared_dir / f"{key}.pkl").read_bytes()))
        return None
