"""The store registry: one :class:`~evalsuite.audit.source.StoreKind` declaration per file in this package, and
those installed plug-ins add.

To add a store (Chroma, Milvus Lite, Qdrant): write ``stores/NAME.py`` holding one ``KIND = StoreKind(...)``
whose ``open`` imports the client lazily and returns an :class:`~evalsuite.audit.source.IndexSource`,
then append it to :data:`STORE_KINDS` below (and its client's module -> extra in ``evalsuite/base/extras.py``).
From another package: the same ``KIND``, named by an entry point in the group ``evalsuite.stores``
(:mod:`evalsuite.base.plugins`; docs/ARCHITECTURE.md shows a whole plug-in); :func:`store_kinds` lists both.
"""

from __future__ import annotations

from ...base import extras, plugins
from ...base.errors import SpecError
from ..source import IndexSource, SourceOptions, StoreKind
from . import faiss as _faiss
from . import lancedb as _lancedb
from . import pgvector as _pgvector

STORE_KINDS: tuple[StoreKind, ...] = (_faiss.KIND, _pgvector.KIND, _lancedb.KIND)


def store_kinds() -> tuple[StoreKind, ...]:
    """The built-in stores, then the plug-ins' (entry points ``evalsuite.stores``; PluginError for a broken one)."""
    return STORE_KINDS + plugins.cached(plugins.STORES, StoreKind, tuple(k.name for k in STORE_KINDS))


def store_for(uri: str) -> StoreKind:
    """The declaration whose scheme starts ``uri``; a URI of no known scheme is a usage error listing them."""
    kinds = store_kinds()
    for kind in kinds:
        if any(uri.startswith(scheme) for scheme in kind.schemes):
            return kind
    schemes = ", ".join(s for kind in kinds for s in kind.schemes)
    raise SpecError(f"--index {uri!r}: no store answers this URI; it must start with one of: {schemes}")


def plugin_help() -> str:
    """What ``--index`` help adds for installed plug-in stores ('' without any); a broken plug-in is said, not
    raised (the help must print)."""
    try:
        added = store_kinds()[len(STORE_KINDS) :]
    except plugins.PluginError as exc:
        return f"; a plug-in store failed to load: {exc}"
    return "".join(f"; {k.schemes[0]}... ({k.name}, a plug-in: {k.help})" for k in added)


def open_source(uri: str, options: SourceOptions | None = None) -> IndexSource:
    """Open the store ``uri`` names (its client checked first: a missing one names its extra)."""
    kind = store_for(uri)
    if kind.extra is not None:
        extras.require(kind.module, f"--index {kind.schemes[0]}...")
    return kind.open(uri, options or SourceOptions())
