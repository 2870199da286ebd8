"""Independent metric computations for the budget's tests: TREC run files read back and scored with a plain loop
(nDCG@10 with linear gains and recall@10, judgements below 1 non-relevant), no evalsuite or ranx code."""

from __future__ import annotations

import math
from pathlib import Path


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip():
            q, d, r = line.split("\t")
            out.setdefault(q, {})[d] = int(r)
    return out


def read_run(path: Path) -> dict[str, list[str]]:
    """Documents per query in the order of their scores (the file's rank order)."""
    rows: dict[str, list[tuple[float, int, str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _, d, rank, score, _ = line.split()
        rows.setdefault(q, []).append((-float(score), int(rank), d))
    return {q: [d for _, _, d in sorted(r)] for q, r in rows.items()}


def ndcg10(ranked: list[str], rels: dict[str, int]) -> float:
    gains = sorted((r for r in rels.values() if r > 0), reverse=True)[:10]
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    dcg = sum(max(rels.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if rels.get(d, 0) > 0)
    return dcg / ideal if ideal else 0.0


def recall10(ranked: list[str], rels: dict[str, int]) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    return len(relevant & set(ranked[:10])) / len(relevant) if relevant else 0.0


def per_query(run: dict[str, list[str]], qrels: dict[str, dict[str, int]], metric: str) -> dict[str, float]:
    """Every query with a relevant document, scored (a query the run lacks scores 0)."""
    f = {"ndcg@10": ndcg10, "recall@10": recall10}[metric]
    return {q: f(run.get(q, []), rels) for q, rels in qrels.items() if any(r > 0 for r in rels.values())}
