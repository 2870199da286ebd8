"""Every index kind, declared once: its parameters and how they are clamped, how FAISS builds and searches
it, and its bytes per vector. :mod:`.spec` parses specs against :data:`INDEX_KINDS`, :mod:`.build` builds and
searches through :func:`kind`, :mod:`.footprint` sums a kind's :meth:`IndexKind.footprint`.

How to add a kind (e.g. ``pq``):

1. Declare one :class:`IndexKind` subclass here (its parameters with defaults in ``defaults``, their
   bounds in :data:`MINIMUM` / :data:`MAXIMUM` when new, :meth:`~IndexKind.make` (the empty FAISS
   index), :meth:`~IndexKind.footprint`, and :meth:`~IndexKind.resolve` when a parameter depends on the
   corpus), and list it in :data:`INDEX_KINDS`.
2. Add its test in ``tests/index/`` (parsing, and its measured bytes against FAISS's serialized size).

Nothing else changes: ``--index``, the ``index`` sweep axis, its help and the reports read the registry.
An installed package adds a kind from outside with an entry point in the group ``evalsuite.index_kinds``
(:mod:`evalsuite.base.plugins`) naming its :class:`IndexKind` subclass or instance; its name must be none of the
built-ins' (a PluginError naming the entry point otherwise), and its own parameters take values >= 1.
faiss and numpy are imported inside the methods that need them, never at import time.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ...base.errors import SpecError

if TYPE_CHECKING:
    import numpy as np


TRAINING_POINTS_PER_CENTROID = 39  # below this FAISS's k-means warns that it has too few points
FLOAT32 = 4
ID_BYTES = 8  # IVF lists store an int64 id beside each code
HNSW_LINK_BYTES = 4  # int32 neighbour ids
HNSW_NODE_BYTES = 4 + 8  # level (int32) and offset (uint64) per node
MINIMUM = {"M": 2, "efc": 1, "ef": 1, "nlist": 1, "nprobe": 1, "m": 1, "nbits": 1}  # per parameter name
MAXIMUM = {"nbits": 16}


@dataclass(frozen=True)
class Footprint:
    """``bytes_per_vector`` grows with the corpus, ``fixed_bytes`` does not; ``rescore_bytes_per_vector``
    is the float32 copy that exact re-scoring reads (it may live on disk)."""

    bytes_per_vector: float
    fixed_bytes: int
    rescore_bytes_per_vector: int

    def total(self, n: int) -> int:
        return round(self.bytes_per_vector * n + self.fixed_bytes)


@dataclass(frozen=True)
class IndexKind(ABC):
    """One kind of index. ``defaults``: its parameters in canonical order (None: resolved per dimension);
    ``gpu``: FAISS can move it to a GPU as built here."""

    name: str
    explanation: str
    defaults: Mapping[str, int | None] = field(default_factory=dict)
    gpu: bool = False

    exact: ClassVar[bool] = False  # the ground truth every other kind is measured against (takes no +rescore)

    @abstractmethod
    def make(self, spec: IndexSpec, d: int, metric: int) -> object:
        """The empty FAISS index for a resolved ``spec`` over ``d`` dimensions."""

    @abstractmethod
    def footprint(self, spec: IndexSpec, d: int) -> Footprint:
        """Bytes of a resolved ``spec`` over vectors of ``d`` dimensions."""

    def resolve(self, spec: IndexSpec, n: int, d: int) -> tuple[IndexSpec, tuple[str, ...]]:
        """``spec`` as built for ``n`` vectors of ``d`` dimensions, and a note per changed parameter."""
        return spec, ()

    def gpu_eligible(self, spec: IndexSpec) -> bool:
        return self.gpu

    def codes(self, vectors: np.ndarray) -> np.ndarray:
        """What the FAISS index stores and is searched with, for float32 ``vectors``."""
        return vectors

    def scores(self, raw: np.ndarray, similarity: str) -> np.ndarray:
        """FAISS's search values as scores, higher is better."""
        return -raw if similarity == "l2" else raw

    def serialize(self, index: Any) -> int:
        """The size of a (CPU) index as FAISS writes it."""
        import faiss

        return int(faiss.serialize_index(index).size)

    def rescore_bytes(self, spec: IndexSpec, d: int) -> int:
        return FLOAT32 * d if spec.rescore else 0


@dataclass(frozen=True)
class Flat(IndexKind):
    exact: ClassVar[bool] = True

    def make(self, spec: IndexSpec, d: int, metric: int) -> object:
        import faiss

        return faiss.IndexFlat(d, metric)

    def footprint(self, spec: IndexSpec, d: int) -> Footprint:
        return Footprint(FLOAT32 * d, 0, self.rescore_bytes(spec, d))


@dataclass(frozen=True)
class HNSW(IndexKind):
    def make(self, spec: IndexSpec, d: int, metric: int) -> object:
        import faiss

        index = faiss.IndexHNSWFlat(d, spec.get("M"), metric)
        index.hnsw.efConstruction = spec.get("efc")
        index.hnsw.efSearch = spec.get("ef")
        return index

    def footprint(self, spec: IndexSpec, d: int) -> Footprint:
        """Expected links: 2M at level 0 plus M/(M-1) above."""
        m = spec.get("M")
        links = 2 * m + m / (m - 1)
        return Footprint(FLOAT32 * d + HNSW_LINK_BYTES * links + HNSW_NODE_BYTES, 0, self.rescore_bytes(spec, d))


@dataclass(frozen=True)
class SQ8(IndexKind):
    def make(self, spec: IndexSpec, d: int, metric: int) -> object:
        import faiss

        return faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_8bit, metric)

    def footprint(self, spec: IndexSpec, d: int) -> Footprint:
        return Footprint(d, 2 * FLOAT32 * d, self.rescore_bytes(spec, d))  # per-dimension minimum and range


def binary_codes(vectors: np.ndarray) -> np.ndarray:
    """Sign bits packed 8 per byte (a dimension > 0 is a 1); the last byte is zero-padded."""
    import numpy as np

    return np.packbits(np.asarray(vectors) > 0, axis=1)


@dataclass(frozen=True)
class Binary(IndexKind):
    def make(self, spec: IndexSpec, d: int, metric: int) -> object:
        import faiss

        return faiss.IndexBinaryFlat(8 * ((d + 7) // 8))

    def footprint(self, spec: IndexSpec, d: int) -> Footprint:
        return Footprint((d + 7) // 8, 0, self.rescore_bytes(spec, d))

    def codes(self, vectors: np.ndarray) -> np.ndarray:
        return binary_codes(vectors)

    def scores(self, raw: np.ndarray, similarity: str) -> np.ndarray:
        import numpy as np

        return -raw.astype(np.float32)  # the negated Hamming distance

    def serialize(self, index: Any) -> int:
        import faiss

        return int(faiss.serialize_index_binary(index).size)


@dataclass(frozen=True)
class IVF(IndexKind):
    """Inverted lists: nlist at most n/39 (FAISS's training points per centroid), nprobe at most nlist."""

    def make(self, spec: IndexSpec, d: int, metric: int) -> object:
        import faiss

        quantizer = faiss.IndexFlat(d, metric)
        index = self.lists(quantizer, spec, d, metric)
        index.nprobe = spec.get("nprobe")
        index.__dict__["_evalsuite_quantizer"] = quantizer  # the Python side owns the quantizer: keep it alive
        return index

    def lists(self, quantizer: Any, spec: IndexSpec, d: int, metric: int) -> Any:
        import faiss

        return faiss.IndexIVFFlat(quantizer, d, spec.get("nlist"), metric)

    def footprint(self, spec: IndexSpec, d: int) -> Footprint:
        return Footprint(FLOAT32 * d + ID_BYTES, self.centroid_bytes(spec, d), self.rescore_bytes(spec, d))

    @staticmethod
    def centroid_bytes(spec: IndexSpec, d: int) -> int:
        return spec.get("nlist") * d * FLOAT32

    def resolve(self, spec: IndexSpec, n: int, d: int) -> tuple[IndexSpec, tuple[str, ...]]:
        notes: list[str] = []
        enough = max(1, n // TRAINING_POINTS_PER_CENTROID)
        nlist = min(spec.get("nlist"), enough)
        if nlist != spec.get("nlist"):
            notes.append(
                f"nlist {spec.get('nlist')} -> {nlist}: {n} vectors train at most {enough} lists "
                f"({TRAINING_POINTS_PER_CENTROID} points each)"
            )
        nprobe = min(spec.get("nprobe"), nlist)
        if nprobe != spec.get("nprobe"):
            notes.append(f"nprobe {spec.get('nprobe')} -> {nprobe}: at most nlist")
        return spec.with_params(nlist=nlist, nprobe=nprobe), tuple(notes)


def _largest_divisor_at_most(d: int, limit: int) -> int:
    return max(m for m in range(1, max(1, min(limit, d)) + 1) if d % m == 0)


@dataclass(frozen=True)
class IVFPQ(IVF):
    """IVF with product-quantized codes: m a divisor of d (default d/8), and 2**nbits at most n/39 (each
    sub-quantizer is trained on n points); the GPU takes 8-bit codes only."""

    def lists(self, quantizer: Any, spec: IndexSpec, d: int, metric: int) -> Any:
        import faiss

        return faiss.IndexIVFPQ(quantizer, d, spec.get("nlist"), spec.get("m"), spec.get("nbits"), metric)

    def gpu_eligible(self, spec: IndexSpec) -> bool:
        return spec.get("nbits") == 8

    def footprint(self, spec: IndexSpec, d: int) -> Footprint:
        nbits = spec.get("nbits")
        code = (spec.get("m") * nbits + 7) // 8
        codebooks = (2**nbits) * d * FLOAT32
        return Footprint(code + ID_BYTES, self.centroid_bytes(spec, d) + codebooks, self.rescore_bytes(spec, d))

    def resolve(self, spec: IndexSpec, n: int, d: int) -> tuple[IndexSpec, tuple[str, ...]]:
        lists, list_notes = super().resolve(spec, n, d)
        notes = list(list_notes)
        enough = max(1, n // TRAINING_POINTS_PER_CENTROID)
        asked_m = dict(spec.params)["m"]
        m = _largest_divisor_at_most(d, asked_m if asked_m is not None else max(1, d // 8))
        if asked_m is not None and m != asked_m:
            notes.append(f"m {asked_m} -> {m}: the largest divisor of dim {d} not above it")
        nbits = min(spec.get("nbits"), max(1, math.floor(math.log2(max(enough, 2)))))
        if nbits != spec.get("nbits"):
            notes.append(
                f"nbits {spec.get('nbits')} -> {nbits}: {n} vectors train at most {enough} centroids per sub-quantizer"
            )
        return lists.with_params(m=m, nbits=nbits), tuple(notes)


INDEX_KINDS: tuple[IndexKind, ...] = (
    Flat("flat", "exact search over float32 vectors (the ground truth)", gpu=True),
    HNSW("hnsw", "graph (M links per node, efc at build, ef at search)", {"M": 32, "efc": 40, "ef": 64}),
    IVF(
        "ivf", "inverted lists over float32 vectors (nlist lists, nprobe searched)", {"nlist": 256, "nprobe": 16}, True
    ),
    IVFPQ(
        "ivfpq",
        "inverted lists with product-quantized codes (m sub-vectors of nbits bits)",
        {"nlist": 256, "nprobe": 16, "m": None, "nbits": 8},
        True,
    ),
    SQ8("sq8", "scalar quantization, 8 bits per dimension"),
    Binary("binary", "sign bits, Hamming distance"),
)


def index_kinds() -> tuple[IndexKind, ...]:
    """The built-in kinds, then the plug-ins' (entry points ``evalsuite.index_kinds``, read once per process; a
    broken one, or one taking a built-in's name, is a PluginError naming its entry point)."""
    from ...base import plugins

    return INDEX_KINDS + plugins.cached(plugins.INDEX_KINDS, IndexKind, tuple(k.name for k in INDEX_KINDS))


def index_kind(name: str) -> IndexKind:
    """The declaration of kind ``name`` (a built-in, or a plug-in's)."""
    kinds = index_kinds()
    for kind in kinds:
        if kind.name == name:
            return kind
    raise SpecError(f"unknown index kind {name!r}; choose one of {', '.join(k.name for k in kinds)}")


@dataclass(frozen=True)
class IndexSpec:
    """One index: its ``kind``, its parameters (canonical names, canonical order; ``None`` = resolved
    per dimension) and ``rescore`` (candidates re-scored exactly; 0 = none)."""

    kind: str
    params: tuple[tuple[str, int | None], ...] = ()
    rescore: int = 0

    def get(self, name: str) -> int:
        value = dict(self.params).get(name)
        if value is None:
            raise KeyError(f"index {self.text}: parameter {name} is not resolved; call resolve() first")
        return value

    @property
    def exact(self) -> bool:
        return index_kind(self.kind).exact

    @property
    def text(self) -> str:
        """The canonical text (what a contract stores)."""
        shown = [f"{k}={v}" for k, v in self.params if v is not None]
        return (
            self.kind + (":" + ",".join(shown) if shown else "") + (f"+rescore={self.rescore}" if self.rescore else "")
        )

    def with_params(self, **changes: int) -> IndexSpec:
        return IndexSpec(self.kind, tuple((k, changes.get(k, v)) for k, v in self.params), self.rescore)
