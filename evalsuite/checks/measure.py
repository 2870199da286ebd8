"""Small measurements shared by the check families: cosines, summaries, the top-k depth, HTTP status classes."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

TOP_K_OVERLAP = 10
UNNORMALIZED_NORM_TOL = 1e-2


def row_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``a`` with the same row of ``b`` (0 for a zero row), in float64."""
    import numpy as np

    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    denom = np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1)
    result: np.ndarray = np.sum(a64 * b64, axis=1) / np.where(denom > 0, denom, 1.0)
    return result


def snippet(text: str, width: int = 50) -> str:
    t = " ".join(text.split())
    return t if len(t) <= width else t[: width - 1] + "…"


def cosine_summary(cos: np.ndarray, ids: Sequence[str]) -> dict[str, Any]:
    worst = int(cos.argmin())
    return {
        "min": round(float(cos.min()), 6),
        "median": round(float(statistics.median(cos.tolist())), 6),
        "worst": ids[worst],
        "per_text": {i: round(float(c), 6) for i, c in zip(ids, cos, strict=False)},
    }


def is_input_rejection(status: int) -> bool:
    """A 4xx that refuses the input (not auth, a missing route, a timeout or rate limiting)."""
    return 400 <= status < 500 and status not in (401, 403, 404, 405, 408, 429)
