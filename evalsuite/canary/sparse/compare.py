"""Two sparse vectors of one text compared (the served one and the reference's, or an alternative's): the share
of active token ids both hold, the largest weight difference. Shared by the checks and the diagnosis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ...encode.sparse import SparseVector


@dataclass(frozen=True)
class TextFit:
    """``overlap``: |ids both hold| / |ids either holds|, an id held by one side only with a weight of at most
    ``edge`` left out (the ReLU's edge: noise, not a disagreement); 1.0 for two empty vectors. ``shared_diff``: the
    largest |served - reference| weight on an id both hold; ``max_diff``: the largest over every id (0 where one
    side holds none)."""

    overlap: float
    shared_diff: float
    max_diff: float
    only_served: tuple[int, ...]
    only_reference: tuple[int, ...]


def compare(served: SparseVector, reference: SparseVector, edge: float = 0.0) -> TextFit:
    s = dict(zip(served[0].tolist(), served[1].tolist(), strict=True))
    r = dict(zip(reference[0].tolist(), reference[1].tolist(), strict=True))
    shared = s.keys() & r.keys()
    only_s = tuple(sorted(i for i in s.keys() - shared if abs(s[i]) > edge))
    only_r = tuple(sorted(i for i in r.keys() - shared if abs(r[i]) > edge))
    union = len(shared) + len(only_s) + len(only_r)
    diffs = [abs(s[i] - r[i]) for i in shared]
    every = diffs + [abs(s[i]) for i in s.keys() - shared] + [abs(r[i]) for i in r.keys() - shared]
    return TextFit(
        overlap=1.0 if union == 0 else len(shared) / union,
        shared_diff=max(diffs, default=0.0),
        max_diff=max(every, default=0.0),
        only_served=only_s,
        only_reference=only_r,
    )


def compare_all(served: Sequence[SparseVector], reference: Sequence[SparseVector], edge: float = 0.0) -> list[TextFit]:
    return [compare(a, b, edge) for a, b in zip(served, reference, strict=True)]


def worst(fits: Sequence[TextFit], key: str) -> int:
    """The index of the worst text by ``key`` (``overlap``: the lowest; a difference: the largest)."""
    values = np.array([getattr(f, key) for f in fits], dtype=np.float64)
    return int(values.argmin() if key == "overlap" else values.argmax())
