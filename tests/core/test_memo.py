"""The one compute-once memo (`base/memo.py`): once per key across threads, failures kept only when asked."""

from __future__ import annotations

import threading
import time

import pytest

from evalsuite.base.errors import EndpointError
from evalsuite.base.memo import Memo


def test_two_threads_asking_at_once_compute_once_and_share_the_value() -> None:
    memo, calls, started = Memo(), [], threading.Event()

    def make() -> list[int]:
        calls.append(1)
        started.set()
        time.sleep(0.2)  # the second caller arrives while this one computes
        return [42]

    got: list[list[int]] = []
    first = threading.Thread(target=lambda: got.append(memo.get("k", make)))
    first.start()
    started.wait(5)
    assert memo.peek("k") is None  # being computed: peek neither waits nor computes
    second = memo.get("k", make)
    first.join(5)
    assert calls == [1] and second == [42] and got[0] is second
    assert memo.peek("k") is second and "k" in memo and len(memo) == 1


def test_a_failure_is_forgotten_unless_its_type_is_remembered() -> None:
    calls: list[str] = []

    def broken() -> int:
        calls.append("x")
        raise EndpointError("the server answered 500")

    plain = Memo()
    for _ in range(2):
        with pytest.raises(EndpointError):
            plain.get("k", broken)
    assert calls == ["x", "x"] and "k" not in plain  # computed again, nothing kept
    calls.clear()
    remembering = Memo(remember=(EndpointError,))
    for _ in range(2):
        with pytest.raises(EndpointError, match="500"):
            remembering.get("k", broken)
    assert calls == ["x"] and remembering.peek("k") is None  # raised again at once, never a value
    with pytest.raises(ValueError):
        remembering.get("other", lambda: int("no"))
    assert "other" not in remembering  # another type is forgotten


def test_pop_hands_back_the_value_and_forgets_it() -> None:
    memo = Memo()
    assert memo.get("k", lambda: "v") == "v"
    assert memo.pop("k") == "v" and memo.pop("k") is None and len(memo) == 0
    assert memo.get("k", lambda: "w") == "w"  # computed again after pop
