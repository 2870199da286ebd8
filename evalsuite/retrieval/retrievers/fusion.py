"""Hybrid fusion through ranx's ``fuse``: the components' runs in, one ranking in the documented tie order out.

A fusion that reads ranks (RRF) is given each component's rank scores (``n - rank``, :meth:`Ranking.rank_scores`),
so ranx ranks every component exactly in its written tie order; a fusion that reads scores is given the raw
scores under the declared normalisation. ranx's fused scores are then ordered by the documented tie order
(score descending, document id descending) and cut at ``k``. A query no component retrieved anything for stays
empty. ranx (numba) is imported on first use.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..search import Ranking
from .params import fusion

if TYPE_CHECKING:
    from .value import RetrievalSpec


def fuse_rankings(spec: RetrievalSpec, runs: Mapping[str, Ranking], k: int) -> Ranking:
    """The hybrid ``spec``'s fusion of ``runs`` (one per component, in ``spec.components`` order), top ``k``."""
    from ranx import Run, fuse

    method = fusion(str(spec.get("fusion")))
    names = list(spec.components)
    qids = list(runs[names[0]])
    ranx_runs = []
    for name in names:
        r = runs[name]
        d = {q: (r.rank_scores(q) if method.reads == "ranks" else dict(r[q])) for q in qids}
        ranx_runs.append(Run(_fill(d), name=name))
    params: dict[str, object] = {}
    if "k" in method.takes:
        params["k"] = int(spec.get("k"))  # type: ignore[arg-type]
    if "weights" in method.takes:
        params["weights"] = list(spec.get("weights"))  # type: ignore[arg-type]
    norm = str(spec.get("norm")) if "norm" in method.takes else None
    with warnings.catch_warnings():  # numba's uint64 -> int64 cast note inside ranx's RRF kernel
        warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")
        fused = fuse(ranx_runs, norm=norm, method=method.ranx, params=params).to_dict()
    scores = {q: {d: s for d, s in fused.get(q, {}).items() if d != _EMPTY} for q in qids}
    ranking = Ranking.from_scores(scores)
    top = {q: ranking.doc_ids[q][:k] for q in qids}
    return Ranking(top, {q: ranking.scores[q][:k] for q in qids}, depth=k, corpus_size=_corpus(runs))


_EMPTY = "\x00evalsuite-empty"  # ranx cannot hold a query without documents: a placeholder, dropped after fusion


def _fill(run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    return {q: (docs if docs else {_EMPTY: 0.0}) for q, docs in run.items()}


def _corpus(runs: Mapping[str, Ranking]) -> int | None:
    sizes = {r.corpus_size for r in runs.values()}
    return sizes.pop() if len(sizes) == 1 else None
