"""Compile ranx's fusion kernels once: ``python -m evalsuite.retrieval.retrievers.warm`` (``scripts/bootstrap.sh``
runs it, as it compiles ranx's metric kernels), so a first hybrid run does not wait for numba."""

from __future__ import annotations

from ..search import Ranking
from .fusion import fuse_rankings
from .params import FUSIONS, NORMS
from .spec import parse_retrieval


def warm() -> None:
    """Fuse two small runs with every declared fusion and normalisation (numba caches the kernels on disk)."""
    a = Ranking.from_scores({"q": {"d1": 2.0, "d2": 1.0}, "r": {}})
    b = Ranking.from_scores({"q": {"d2": 0.5, "d3": 0.25}, "r": {"d1": 1.0}})
    for f in FUSIONS:
        for norm in NORMS if "norm" in f.takes else ("min-max",):
            extra = f",norm={norm}" if "norm" in f.takes else ""
            fuse_rankings(parse_retrieval(f"hybrid:fusion={f.name}{extra}"), {"dense": a, "bm25": b}, 10)


if __name__ == "__main__":
    warm()
