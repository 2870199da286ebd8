"""The declared index as two budget stages: its compression and its approximate search."""

from __future__ import annotations

from dataclasses import dataclass

from ..retrieval.index.spec import IndexSpec, parse_index
from .config import Config


@dataclass(frozen=True)
class IndexLayout:
    """The declared index as two parts a stage each: ``compression`` (the codes the vectors are stored as,
    searched exhaustively) and ``ann`` (the approximate search over float32 vectors). IVF-PQ is both: its codes
    with every list probed, and IVF with its nprobe over float32 vectors."""

    declared: IndexSpec
    compression: IndexSpec | None
    ann: IndexSpec | None

    @classmethod
    def of(cls, text: str) -> IndexLayout:
        spec = parse_index(text)
        p = dict(spec.params)
        if spec.kind == "flat":
            return cls(spec, None, None)
        if spec.kind in ("hnsw", "ivf"):
            return cls(spec, None, spec)
        if spec.kind == "ivfpq":
            exhaustive = spec.with_params(nprobe=int(p["nlist"] or 1))
            lists = IndexSpec("ivf", (("nlist", p["nlist"]), ("nprobe", p["nprobe"])))
            return cls(spec, exhaustive, lists)
        return cls(spec, spec, None)  # sq8, binary: codes searched exhaustively

    def spec(self, config: Config) -> IndexSpec:
        """The index a configuration searches with."""
        if config.compressed and config.approximate:
            return self.declared
        if config.compressed and self.compression is not None:
            return self.compression
        if config.approximate and self.ann is not None:
            return self.ann
        return parse_index("flat")

    @property
    def compression_label(self) -> str:
        c = self.compression
        if c is None:
            return "none"
        p = dict(c.params)
        label = {"sq8": "SQ8", "binary": "binary"}.get(c.kind) or (
            "PQ" + (f" (m {p['m']}, {p['nbits']} bits)" if p.get("m") else f" ({p['nbits']} bits)")
        )
        return label + (f" with exact re-scoring of {c.rescore}" if c.rescore else "")

    @property
    def ann_label(self) -> str:
        a = self.ann
        if a is None:
            return "exhaustive"
        p = dict(a.params)
        if a.kind == "hnsw":
            return f"HNSW (M {p['M']}, ef_search {p['ef']})"
        return f"IVF (nprobe {p['nprobe']} of {p['nlist']} lists)"

    @property
    def ann_knob(self) -> str:
        a = self.ann
        return "ef_search" if a is not None and a.kind == "hnsw" else "nprobe"
