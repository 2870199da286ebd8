"""Session fixtures that end where the tests needing them end: a test suite's servers, held group by group.

A session-scoped fixture that starts real servers (an engine launcher) lives, by pytest's rule, until the end
of the session. Under ``pytest-xdist --dist loadgroup`` a group's tests run one after another on one worker, so the
servers a group started are idle once its last test is done, and several groups' servers held to the end outgrow
the machine (six vLLM servers beside every other group's). ``Lifetimes`` ends them earlier: a fixture registers
itself (``hold``) when it is set up, and after each test (``after``, from ``pytest_runtest_teardown``) where the
next test is in another xdist group (or none) and does not ask for a held fixture, that fixture is torn down by
pytest's own ``FixtureDef.finish``: its finalizers run, and so do those of every fixture built on it, and each is
set up again if a later test asks for it.
"""

from __future__ import annotations

import pytest


def xdist_group(item: pytest.Item | None) -> object:
    """The ``xdist_group`` of ``item`` (None: no group, or no item)."""
    marker = None if item is None else item.get_closest_marker("xdist_group")
    if marker is None:
        return None
    return marker.args[0] if marker.args else marker.kwargs.get("name")


class Lifetimes:
    """The fixtures held in this test process, by name, each with the request that set it up."""

    def __init__(self) -> None:
        self.held: dict[str, pytest.FixtureRequest] = {}

    def hold(self, request: pytest.FixtureRequest) -> None:
        """Called by a session fixture as it is set up: it ends with the tests that need it."""
        self.held[request.fixturename or ""] = request

    def after(self, item: pytest.Item, nextitem: pytest.Item | None) -> list[str]:
        """After ``item``'s teardown: end every held fixture that ``nextitem`` does not ask for when the next test is
        in another xdist group; the names ended. At the end of the session (no next test) pytest ends them."""
        if nextitem is None or xdist_group(nextitem) == xdist_group(item):
            return []
        ended = []
        wanted = set(getattr(nextitem, "fixturenames", ()))  # a pytest Function's fixture closure
        for name, request in list(self.held.items()):
            if name in wanted:
                continue
            del self.held[name]
            fixturedef = getattr(request, "_fixturedef", None)  # pytest's SubRequest: the fixture it set up
            if fixturedef is not None:
                fixturedef.finish(request)
                ended.append(name)
        return ended
