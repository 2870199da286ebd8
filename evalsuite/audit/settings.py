"""The audit's thresholds and sampling, declared once: the options, the help and audit.json read them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..base.errors import SpecError


@dataclass(frozen=True)
class AuditSettings:
    """How strict the audit is. Every threshold a check compares against is one field here."""

    detect: float = 0.01  # the share of bad stored vectors the fidelity sample must catch (with DETECT_CONFIDENCE)
    audit_all: bool = False  # fidelity over every stored vector instead of the sample
    seed: int = 0  # the sample's seed
    min_cosine: float = 0.999  # a stored vector whose cosine with its chunk's reference is below this is infidel
    norm_tol: float = 1e-3  # |norm - 1| above this is "off 1" when the contract normalizes
    max_delta: float = 0.01  # retrieval: the non-inferiority margin of the index against the reference
    gates: tuple[str, ...] = ()  # --audit-gate EXPR (release-gate syntax); none: METRIC:non_inferior=max_delta each
    min_ann_recall: float = 0.9  # the index's own search against its exact search, recall@k
    k: int = 10  # ANN recall@k and "no relevant chunk retrieved" cut-off
    window: int = 64  # rows either side of an infidel row searched for the chunk its vector belongs to
    suspect_models: tuple[str, ...] = ()  # --suspect-model DIR: a previous revision a stale vector may come from
    scan_rows: int = 65536  # stored vectors read at once (--audit-block-rows)
    deadline: float = 86400.0  # seconds; the audit reads and encodes locally, so this only bounds a hang

    def __post_init__(self) -> None:
        if not 0.0 < self.detect <= 1.0:
            raise SpecError(f"--audit-detect {self.detect}: must be a share in (0, 1], e.g. 0.01")
        if not -1.0 <= self.min_cosine <= 1.0:
            raise SpecError(f"--audit-min-cosine {self.min_cosine}: must be in [-1, 1]")
        if self.max_delta < 0 or not 0.0 <= self.min_ann_recall <= 1.0 or self.k < 1 or self.window < 1:
            raise SpecError("--audit-max-delta >= 0, --audit-min-ann-recall in [0, 1], --audit-k >= 1, window >= 1")

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> AuditSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in values.items() if k in known and v is not None}
        for name in ("suspect_models", "gates"):
            if name in kw:
                kw[name] = tuple(kw[name])
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["suspect_models"] = list(self.suspect_models)
        d["gates"] = list(self.gates)
        return d
