"""Index specs: which FAISS index a contract searches with, as one canonical text (pure, no faiss).

Grammar: ``KIND[:NAME=VALUE,...][+rescore=R]``, e.g. ``flat``, ``hnsw:M=32,ef=128``,
``ivf:nlist=256,nprobe=16``, ``ivfpq:nlist=256,m=48,nbits=8``, ``sq8``, ``binary``,
``binary+rescore=100``. Every kind but ``flat`` takes ``+rescore=R``: the top ``max(R, k)``
candidates are re-scored exactly with the float vectors. The canonical text fills in every
default (``hnsw`` is ``hnsw:M=32,efc=40,ef=64``) so two contracts naming the same index compare
equal; IVF-PQ's ``m`` defaults to the dimension / 8 and is then resolved per dimension.

:func:`resolve` turns a spec into what is really built for ``n`` vectors of ``d`` dimensions
(FAISS wants about 39 training points per centroid), and says what it changed.
"""

from __future__ import annotations

from ...base.errors import SpecError
from .kinds import INDEX_KINDS, MAXIMUM, MINIMUM, TRAINING_POINTS_PER_CENTROID, IndexSpec, index_kind, index_kinds

__all__ = [
    "DEFAULTS",
    "EXPLANATIONS",
    "INDEX_KIND_NAMES",
    "TRAINING_POINTS_PER_CENTROID",
    "IndexSpec",
    "parse_index",
    "resolve",
]

# kind -> (canonical parameter names in order, defaults); a missing default is resolved per dimension
DEFAULTS: dict[str, dict[str, int | None]] = {k.name: dict(k.defaults) for k in INDEX_KINDS}
INDEX_KIND_NAMES: tuple[str, ...] = tuple(DEFAULTS)
EXPLANATIONS = {k.name: k.explanation for k in INDEX_KINDS}
_ALIASES = {"efsearch": "ef", "ef_search": "ef", "efconstruction": "efc", "ef_construction": "efc"}
EXAMPLE = "hnsw:M=32,ef=128, ivf:nlist=256,nprobe=16, ivfpq:nlist=256,m=48,nbits=8, sq8, binary+rescore=100"


def _error(text: str, message: str) -> SpecError:
    return SpecError(f"index {text!r}: {message}; e.g. {EXAMPLE}")


def _int(text: str, name: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise _error(text, f"{name}={raw!r} is not an integer") from None


def parse_index(text: str) -> IndexSpec:
    """Parse an index spec (case-insensitive kinds and names; ``efSearch``/``efConstruction``
    are ``ef``/``efc``). Raises :class:`SpecError` naming the valid kinds and parameters."""
    if not isinstance(text, str) or not text.strip():
        raise _error(str(text), "an index is a non-empty text")
    body, plus, tail = text.strip().partition("+")
    rescore = 0
    if plus:
        name, eq, raw = tail.partition("=")
        if name.strip().lower() != "rescore" or not eq:
            raise _error(text, f"unknown modifier {tail!r}; the only one is +rescore=R")
        rescore = _int(text, "rescore", raw)
        if rescore < 1:
            raise _error(text, "rescore must be >= 1 (candidates re-scored exactly)")
    kind, colon, rest = body.partition(":")
    kind = kind.strip().lower()
    declared = {k.name: k for k in index_kinds()}  # the built-ins, then the plug-ins' (evalsuite.index_kinds)
    if kind not in declared:
        raise _error(text, f"unknown index kind {kind!r}; choose one of {', '.join(declared)}")
    if rescore and declared[kind].exact:
        raise _error(text, f"{kind} is exact already; rescore applies to the approximate kinds")
    defaults = dict(declared[kind].defaults)
    by_lower = {n.lower(): n for n in defaults}  # names are case-insensitive (hnsw's M, ivfpq's m)
    values: dict[str, int | None] = dict(defaults)
    if colon:
        if not rest.strip():
            raise _error(text, "nothing after ':'")
        for item in rest.split(","):
            name, eq, raw = item.partition("=")
            key = name.strip()
            key = _ALIASES.get(key.lower(), key)
            key = key if key in defaults else by_lower.get(key.lower(), key.lower())
            if not eq or key not in defaults:
                known = ", ".join(defaults) or "none"
                raise _error(text, f"{kind} has no parameter {name.strip()!r} (parameters: {known})")
            value = _int(text, key, raw)
            least = MINIMUM.get(key, 1)  # a plug-in kind's own parameter: >= 1
            if value < least or value > MAXIMUM.get(key, value):
                raise _error(
                    text,
                    f"{key}={value} is out of range (>= {least}"
                    + (f", <= {MAXIMUM[key]}" if key in MAXIMUM else "")
                    + ")",
                )
            values[key] = value
    return IndexSpec(kind, tuple(values.items()), rescore)


def canonical(text: str) -> str:
    """The canonical text of an index spec (defaults filled in)."""
    return parse_index(text).text


def resolve(spec: IndexSpec, n: int, d: int) -> tuple[IndexSpec, tuple[str, ...]]:
    """The spec as built for ``n`` vectors of ``d`` dimensions, and a note per changed parameter (each kind's
    :meth:`~evalsuite.retrieval.index.kinds.IndexKind.resolve`: IVF's nlist at most n/39, FAISS's training points per
    centroid, nprobe at most nlist; IVF-PQ's m a divisor of d (default d/8) and 2**nbits at most n/39)."""
    return index_kind(spec.kind).resolve(spec, n, d)
