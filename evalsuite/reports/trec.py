"""TREC run format: `qid Q0 docid rank score tag`, read back in exactly the written order by any tool.

The score column is the raw float32 similarity of the ranking, lowered where needed by the fewest
float32 steps that make it strictly decreasing within a query (only tied documents move, by a few
units in the 8th significant digit). Tools re-sort a run by score and ignore the rank column:
``trec_eval`` reads the score as a float32 and breaks ties by document id descending, ranx sorts
with an unstable sort. With no two equal scores in a query, all of them read the written order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..retrieval.search import Ranking


def strictly_decreasing(scores: Sequence[float]) -> list[np.float32]:
    """``scores`` (best first, non-increasing) as float32 values, each strictly below the one before."""
    out: list[np.float32] = []
    floor = np.float32(np.inf)
    for s in scores:
        v = np.float32(s)
        if not v < floor:
            v = np.nextafter(floor, np.float32(-np.inf))
        out.append(v)
        floor = v
    return out


def trec_run(ranking: Ranking | Mapping[str, Mapping[str, float]], tag: str = "evalsuite") -> str:
    ranked = ranking if isinstance(ranking, Ranking) else Ranking.from_scores(ranking)
    lines = []
    for qid in ranked:
        docs = ranked.doc_ids[qid]
        for rank, (did, s) in enumerate(zip(docs, strictly_decreasing(ranked.scores[qid]), strict=False), start=1):
            # numpy prints the shortest text that reads back as this very float32
            lines.append(f"{qid} Q0 {did} {rank} {np.format_float_positional(s, unique=True, trim='-')} {tag}")
    return "\n".join(lines) + "\n"
