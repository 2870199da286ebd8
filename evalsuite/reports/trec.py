"""TREC run format: `qid Q0 docid rank score tag`."""

from __future__ import annotations

from typing import Mapping


def trec_run(ranking: Mapping[str, Mapping[str, float]], tag: str = "evalsuite") -> str:
    lines = []
    for qid, docs in ranking.items():
        for rank, (did, s) in enumerate(docs.items(), start=1):
            lines.append(f"{qid} Q0 {did} {rank} {s:.6f} {tag}")
    return "\n".join(lines) + "\n"
