"""The store registry: one :class:`~evalsuite.audit.source.StoreKind` declaration per file in this package.

To add a store (Chroma, Milvus Lite, Qdrant): write ``stores/NAME.py`` holding one ``KIND = StoreKind(...)``
whose ``open`` imports the client lazily and returns an :class:`~evalsuite.audit.source.IndexSource`,
then append it to :data:`STORE_KINDS` below (and its client's module -> extra in ``evalsuite/extras.py``).
"""

from __future__ import annotations

from ...base import extras
from ...base.errors import SpecError
from ..source import IndexSource, SourceOptions, StoreKind
from . import faiss as _faiss
from . import lancedb as _lancedb
from . import pgvector as _pgvector

STORE_KINDS: tuple[StoreKind, ...] = (_faiss.KIND, _pgvector.KIND, _lancedb.KIND)


def store_for(uri: str) -> StoreKind:
    """The declaration whose scheme starts ``uri``; a URI of no known scheme is a usage error listing them."""
    for kind in STORE_KINDS:
        if any(uri.startswith(scheme) for scheme in kind.schemes):
            return kind
    schemes = ", ".join(s for kind in STORE_KINDS for s in kind.schemes)
    raise SpecError(f"--index {uri!r}: no store answers this URI; it must start with one of: {schemes}")


def open_source(uri: str, options: SourceOptions | None = None) -> IndexSource:
    """Open the store ``uri`` names (its client checked first: a missing one names its extra)."""
    kind = store_for(uri)
    if kind.extra is not None:
        extras.require(kind.module, f"--index {kind.schemes[0]}...")
    return kind.open(uri, options or SourceOptions())
