"""Plug-ins: declarations an installed package adds to a family through an entry point, read beside the family's
own (as pytest reads ``pytest11``). The groups:

=========================  =============================================================================  =================================
group                      the entry point names                                                          read by
=========================  =============================================================================  =================================
``evalsuite.stores``       a ``StoreKind`` (``evalsuite.audit.source``)                                   ``audit/stores``
``evalsuite.gate_kinds``   a ``GateKind`` subclass or instance (``evalsuite.gating.gates``)               ``gating/kinds.py``
``evalsuite.checks``       a ``PluginCheck``: a ``Check`` and its family (``evalsuite.checks``)           its family's registry
``evalsuite.index_kinds``  an ``IndexKind`` subclass or instance (``evalsuite.retrieval.index.kinds``)    ``retrieval/index/kinds.py``
``evalsuite.retrievers``   a ``RetrieverKind`` subclass or instance (``evalsuite.retrieval.retrievers``)  ``retrieval/retrievers/kinds.py``
``evalsuite.jobs``         a ``Job`` (``evalsuite.base.jobs``): a subcommand, and its pytest part if any  ``jobs.py`` (``all_jobs()``)
=========================  =============================================================================  =================================

A plug-in package declares, in its ``pyproject.toml``::

    [project.entry-points."evalsuite.stores"]
    mystore = "my_package.store:KIND"

A plug-in's name must differ from every built-in declaration's and every other plug-in's in the family (a group
whose plug-ins each name their family, as ``evalsuite.checks``, reads :func:`entries` and checks each family's
built-ins itself). An entry
point that cannot be loaded, names something else, or takes a taken name is a :class:`PluginError` naming the
entry point, its distribution and what to do — when the family is first used, never at ``import evalsuite``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib import metadata
from typing import TypeVar

from .errors import PluginError as PluginError  # raised here, caught by the families

T = TypeVar("T")

STORES = "evalsuite.stores"
GATE_KINDS = "evalsuite.gate_kinds"
CHECKS = "evalsuite.checks"
INDEX_KINDS = "evalsuite.index_kinds"
RETRIEVERS = "evalsuite.retrievers"
JOBS = "evalsuite.jobs"
GROUPS = (STORES, GATE_KINDS, CHECKS, INDEX_KINDS, RETRIEVERS, JOBS)


def entry_points(group: str) -> tuple[metadata.EntryPoint, ...]:
    """The installed entry points of ``group``, sorted by name (one per name and distribution)."""
    found = {(ep.name, ep.value): ep for ep in metadata.entry_points(group=group)}
    return tuple(sorted(found.values(), key=lambda ep: (ep.name, ep.value)))


def where(ep: metadata.EntryPoint) -> str:
    """``NAME = module:attr`` (group G, from DIST VERSION): how an error names an entry point."""
    dist = f", from {ep.dist.name} {ep.dist.version}" if ep.dist is not None else ""
    return f"entry point {ep.name} = {ep.value} (group {ep.group}{dist})"


def load_entry(ep: metadata.EntryPoint, kind: type[T]) -> T:
    """The declaration ``ep`` names: an instance of ``kind`` (a subclass of ``kind`` is instantiated with no
    arguments) with a non-empty ``name``; PluginError naming the entry point otherwise."""
    try:
        obj = ep.load()
    except Exception as exc:  # a plug-in's own import error: named, with the entry point
        raise PluginError(
            f"{where(ep)} cannot be loaded ({type(exc).__name__}: {exc}); fix or uninstall that package"
        ) from exc
    if isinstance(obj, type) and issubclass(obj, kind):
        try:
            obj = obj()
        except Exception as exc:
            raise PluginError(
                f"{where(ep)}: {obj.__name__}() failed ({type(exc).__name__}: {exc}); a declaration class must "
                "construct without arguments"
            ) from exc
    if not isinstance(obj, kind):
        raise PluginError(
            f"{where(ep)} names a {type(obj).__name__}, not a {kind.__name__}; point it at a "
            f"{kind.__module__}.{kind.__name__}"
        )
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        raise PluginError(f"{where(ep)}: its {kind.__name__} has no name; give it one")
    return obj


def taking(ep: metadata.EntryPoint, name: str, taken: dict[str, str]) -> None:
    """Record that ``ep`` declares ``name`` in ``taken`` ({name: who has it}); PluginError when it is taken."""
    if name in taken:
        raise PluginError(
            f"{where(ep)} declares {name!r}, a name {taken[name]} already has; rename the plug-in's declaration"
        )
    taken[name] = f"{where(ep)}"


def load(group: str, kind: type[T], builtin: Iterable[str]) -> tuple[T, ...]:
    """Every plug-in declaration of ``group`` (:func:`load_entry`), its ``name`` taken by no built-in (``builtin``)
    and no other plug-in."""
    taken = {n: "a built-in" for n in builtin}
    out: list[T] = []
    for ep in entry_points(group):
        obj = load_entry(ep, kind)
        taking(ep, str(getattr(obj, "name", "")), taken)
        out.append(obj)
    return tuple(out)


@functools.cache
def entries(group: str, kind: type[T]) -> tuple[tuple[metadata.EntryPoint, T], ...]:
    """Each entry point of ``group`` with the declaration it names (:func:`load_entry`), once per process."""
    return tuple((ep, load_entry(ep, kind)) for ep in entry_points(group))


@functools.cache
def cached(group: str, kind: type[T], builtin: tuple[str, ...]) -> tuple[T, ...]:
    """:func:`load`, once per process (a family asks on every lookup)."""
    return load(group, kind, builtin)


def forget() -> None:
    """Read the entry points again on the next lookup (after installing a plug-in into a running process)."""
    cached.cache_clear()
    entries.cache_clear()
