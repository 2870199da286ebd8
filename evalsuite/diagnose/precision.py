"""How served vectors depart from one alternative's, text by text: the evidence for reduced precision (issue 31).

A quantized model (a q8_0 or q4_0 GGUF, int8 or fp8 weights) or a low-precision kernel moves every vector a
little, in a direction no reference pass reproduces: no alternative *explains* such vectors, yet the closest one
is the right contract. What sets that apart from the faults the alternatives name is the shape of the departure:

- **high**: the texts keep most of their direction (median cosine at least :data:`MEDIAN_COSINE`; measured on the
  bundled all-MiniLM-L6-v2 served from GGUF files: q8_0 0.9997, q4_0 0.972; another model or revision, or another
  pooling, 0.3-0.9);
- **even**: every text departs, the quietest at least :data:`EVENNESS` of the median (q8_0 0.86, q4_0 0.80),
  where truncation, a prefix on one role, or a cut of over-long inputs leave most texts exactly as they were
  (evenness about 0);
- **in direction**: the loudest text's direction departs beyond the diagnosis's tolerance (a server that only
  scales the vectors has other norms, not lower precision).

Pure numpy, like :mod:`.score`, which names the cause.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MEDIAN_COSINE = 0.95  # the least median cosine of reduced precision (q4_0 here: 0.972; another model: <= 0.9)
EVENNESS = 0.25  # the quietest text's departure over the median's, at least (quantization: 0.8; truncation: ~0)
MIN_TEXTS = 5  # fewer texts show no shape (the index audit diagnoses one vector at a time)


@dataclass(frozen=True)
class Spread:
    """Per-text cosines of served vectors to one alternative's, and how evenly their directions depart
    (``departure``: the distance between unit vectors, sqrt(2 - 2 cos))."""

    texts: int
    min_cosine: float
    median_cosine: float
    mean_cosine: float
    max_departure: float
    evenness: float  # the quietest text's departure over the median text's (0 when the median is 0)
    worst: str  # the id of the text of least cosine
    quietest: str

    def reduced_precision(self, tol: float) -> bool:
        """The departure reduced precision makes: high, even, and in direction beyond ``tol``."""
        return (
            self.texts >= MIN_TEXTS
            and self.median_cosine >= MEDIAN_COSINE
            and self.evenness >= EVENNESS
            and self.max_departure > tol
        )

    def evidence(self) -> str:
        return (
            f"every text departs evenly from it (cosine min {self.min_cosine:.4f} on {self.worst}, median "
            f"{self.median_cosine:.4f}, mean {self.mean_cosine:.4f} over {self.texts} texts; the quietest text, "
            f"{self.quietest}, departs {self.evenness:.2f} of the median's)"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "texts": self.texts,
            "min_cosine": round(self.min_cosine, 6),
            "median_cosine": round(self.median_cosine, 6),
            "mean_cosine": round(self.mean_cosine, 6),
            "max_departure": float(f"{self.max_departure:.3g}"),
            "evenness": round(self.evenness, 4),
            "worst": self.worst,
            "quietest": self.quietest,
        }


def spread(served: np.ndarray, candidate: np.ndarray, ids: Sequence[str]) -> Spread:
    """How ``served`` departs from ``candidate``, row by row (rows of zero norm count as orthogonal)."""
    s, c = np.asarray(served, np.float64), np.asarray(candidate, np.float64)
    if s.shape != c.shape or not len(s):
        raise ValueError(f"served {s.shape} and candidate {c.shape} vectors differ in shape or are empty")
    sn, cn = np.linalg.norm(s, axis=1), np.linalg.norm(c, axis=1)
    denom = sn * cn
    cos = np.clip(np.sum(s * c, axis=1) / np.where(denom > 0, denom, 1.0), -1.0, 1.0)
    away = np.sqrt(2.0 - 2.0 * cos)
    median = float(np.median(away))
    return Spread(
        texts=len(cos),
        min_cosine=float(cos.min()),
        median_cosine=float(np.median(cos)),
        mean_cosine=float(cos.mean()),
        max_departure=float(away.max()),
        evenness=float(away.min()) / median if median > 0 else 0.0,
        worst=ids[int(cos.argmin())],
        quietest=ids[int(away.argmin())],
    )
