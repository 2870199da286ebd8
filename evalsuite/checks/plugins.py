"""Checks an installed package adds to a family: the entry-point group ``evalsuite.checks`` names a
:class:`PluginCheck` (a :class:`~.declaration.Check` and the family it joins), read beside the family's own checks
by its registry (``canary_checks()`` in ``canary/embedding/registry.py``, ``audit_checks()`` in
``audit/checks.py``), so the CLI, the pytest items and the reports run it like a built-in one, after them.

A plug-in package declares, in its ``pyproject.toml``::

    [project.entry-points."evalsuite.checks"]
    rows = "my_package:ROWS"        # ROWS = PluginCheck(family="audit", check=Check(name="rows", ...))

A plug-in check's name differs from its family's built-in checks' and every other plug-in check's; one that cannot
be loaded, names something else, names an unknown family or takes a taken name is a PluginError naming its entry
point (:mod:`evalsuite.base.plugins`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from ..base import plugins
from ..base.errors import SpecError
from .declaration import C, Check

# the families a plug-in check can join: the embedding canary's (a Check[CanaryContext]) and the index audit's
# (a Check[AuditContext])
FAMILIES = ("embedding", "audit")


@dataclass(frozen=True)
class PluginCheck:
    """A check from another package: ``check`` joins ``family`` (one of :data:`FAMILIES`)."""

    family: str
    check: Check[Any]

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise SpecError(
                f"plug-in check {getattr(self.check, 'name', '?')!r}: family {self.family!r} is not one of "
                f"{', '.join(FAMILIES)}"
            )
        if not isinstance(self.check, Check):
            raise SpecError(f"a PluginCheck holds an evalsuite.checks.Check, not a {type(self.check).__name__}")

    @property
    def name(self) -> str:
        return self.check.name


def with_plugins(family: str, builtin: tuple[Check[C], ...]) -> tuple[Check[C], ...]:
    """``builtin`` (a family's checks in run order), then each installed plug-in check of ``family`` (by entry-point
    name); PluginError for a plug-in that cannot be read or takes a taken name."""
    taken = {c.name: f"a built-in {family} check" for c in builtin}
    added: list[Check[C]] = []
    for ep, plugin in plugins.entries(plugins.CHECKS, PluginCheck):
        if plugin.family == family:
            plugins.taking(ep, plugin.name, taken)
            added.append(cast("Check[C]", plugin.check))
    return (*builtin, *added) if added else builtin
