"""Benchmark: evalsuite's bm25 retriever against bm25s's own index + retrieve on the same corpus and queries, side by
side in one process (a script, not a test).

    .venv/bin/python bench/bm25.py [--docs 200000] [--queries 1000] [--k 100] [--repeat 3]

A synthetic corpus of ``docs`` short documents over a Zipf-like vocabulary (the tiny model's words and numbered
terms) and ``queries`` queries of 2 to 6 words. Both sides do the same work from texts: tokenize the corpus with
``bm25s.tokenize(stopwords="en")``, index with ``bm25s.BM25()`` (Lucene, k1 1.5, b 0.75), tokenize the queries and
retrieve the top ``k`` of each. bm25s: ``BM25.retrieve(k=k)`` (its numpy top-k, ties in any order); evalsuite:
``bm25_ranking`` (bm25s's scores, only documents sharing a term, the documented tie order, a ``Ranking``). The
sides alternate ``repeat`` times and the fastest of each is kept; the top-k overlap of the two is printed (1.0
but for ties at the cut-off), and last ``ratio evalsuite/bm25s X.XX`` (wall times).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import zipf_texts  # noqa: E402


def corpus(docs: int, queries: int, seed: int = 0) -> tuple[list[str], list[str]]:
    from evalsuite.testing.tiny_bert import WORDS

    return zipf_texts([w for w in WORDS if len(w) > 2] + [f"term{i}" for i in range(20000)], docs, queries, seed)


@dataclass(frozen=True)
class Texts:
    query_ids: list[str]
    queries: list[str]
    doc_ids: list[str]
    docs: list[str]
    corpus_key: str

    def query_texts(self) -> list[str]:
        return self.queries

    def doc_texts(self) -> list[str]:
        return self.docs

    def dense(self, k: int) -> object:
        raise NotImplementedError

    def sparse(self, top_k: int, k: int) -> object:
        raise NotImplementedError


def run_bm25s(docs: list[str], queries: list[str], k: int) -> tuple[float, list[set[int]]]:
    import bm25s

    t0 = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    found, scores = retriever.retrieve(
        bm25s.tokenize(queries, stopwords="en", show_progress=False), k=k, show_progress=False
    )
    seconds = time.perf_counter() - t0
    return seconds, [
        {int(d) for d, s in zip(row, srow, strict=True) if s > 0} for row, srow in zip(found, scores, strict=True)
    ]


def run_evalsuite(texts: Texts, k: int) -> tuple[float, list[set[int]]]:
    from evalsuite.retrieval.retrievers import bm25 as module

    module._BUILT.clear()  # index from scratch every time, as bm25s does
    t0 = time.perf_counter()
    ranking, _ = module.bm25_ranking(module.BM25Settings(), texts, k)  # type: ignore[arg-type]
    seconds = time.perf_counter() - t0
    return seconds, [{int(d[1:]) for d in ranking.doc_ids[q]} for q in texts.query_ids]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    docs, queries = corpus(args.docs, args.queries)
    texts = Texts([f"q{i}" for i in range(len(queries))], queries, [f"d{i}" for i in range(len(docs))], docs, "bench")
    print(
        f"corpus {len(docs):,} documents ({sum(len(d) for d in docs) / 2**20:.1f} MiB), {len(queries):,} queries, k {args.k}"
    )
    best = {"bm25s": float("inf"), "evalsuite": float("inf")}
    overlap = 0.0
    for _ in range(args.repeat):
        s1, theirs = run_bm25s(docs, queries, args.k)
        s2, ours = run_evalsuite(texts, args.k)
        best["bm25s"], best["evalsuite"] = min(best["bm25s"], s1), min(best["evalsuite"], s2)
        overlap = float(np.mean([len(a & b) / max(1, len(a)) for a, b in zip(theirs, ours, strict=True)]))
        print(f"  bm25s {s1:.2f} s   evalsuite {s2:.2f} s")
    print(f"bm25s      {best['bm25s']:.2f} s (index + retrieve)")
    print(f"evalsuite  {best['evalsuite']:.2f} s (index + retrieve, tie order, Ranking)")
    print(f"top-{args.k} overlap {overlap:.4f}")
    print(f"ratio evalsuite/bm25s {best['evalsuite'] / best['bm25s']:.2f}")


if __name__ == "__main__":
    main()
