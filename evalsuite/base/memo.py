"""The one compute-once memo: what a canary context, an audit context and a gated session (in-process, under its
cross-worker layer `gating/shared.py`) compute once and share.

``Memo.get(key, make)`` runs ``make()`` once per key; a second caller, in any thread, waits for the first one's
result. A failure reaches every caller waiting for it; it is kept (raised again at once, ``make`` not run again)
only when its type is one of ``remember`` — a broken server is not asked again — and otherwise forgotten, so the
next caller computes again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar, cast

T = TypeVar("T")


class Memo:
    def __init__(self, remember: tuple[type[BaseException], ...] = ()) -> None:
        self.remember = remember
        self._entries: dict[str, Future[Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str, make: Callable[[], T]) -> T:
        """``make()``'s value under ``key``, computed once (see the module doc for failures)."""
        with self._lock:
            entry = self._entries.get(key)
            mine = entry is None
            if entry is None:
                entry = self._entries[key] = Future()
        if mine:
            try:
                entry.set_result(make())
            except BaseException as exc:
                if not isinstance(exc, self.remember):
                    with self._lock:
                        self._entries.pop(key, None)
                entry.set_exception(exc)
                raise
        return cast(T, entry.result())

    def peek(self, key: str) -> object | None:
        """The value under ``key`` if it has been computed (None otherwise, or while it is being computed); never
        computes, never waits."""
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or not entry.done() or entry.exception() is not None:
            return None
        return cast(object, entry.result())

    def pop(self, key: str) -> object | None:
        """Forget ``key``, handing back its value if it had one (what :meth:`peek` would have said)."""
        value = self.peek(key)
        with self._lock:
            self._entries.pop(key, None)
        return value

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        """How many keys are computed, being computed, or remembered as failed."""
        with self._lock:
            return len(self._entries)
