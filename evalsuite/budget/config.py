"""One configuration of the deployed pipeline: what each budget stage changes (:mod:`.stages`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

REFERENCE_DTYPE = "float32"


@dataclass(frozen=True)
class Config:
    """One configuration of the pipeline: which encoder, its precision, the dimension kept, which parts of the
    declared index apply (its compression, its approximate search), whether the built index (the store) answers, and the stages after the ranking."""

    dim: int
    served: bool = False
    dtype: str = REFERENCE_DTYPE
    compressed: bool = False  # the index stores compressed codes (the declared index's compression part)
    approximate: bool = False  # the index searches approximately (the declared index's search part)
    store: bool = False
    hybrid: bool = False
    reranker: bool = False

    def key(self) -> Config:
        """The configuration with what another stage covers left out (equal keys give equal rankings)."""
        c = self
        if c.served:
            c = dataclasses.replace(c, dtype="served")
        if c.store:
            c = dataclasses.replace(c, compressed=False, approximate=False)
        return c

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)
