"""The benchmarks' synthetic texts: a BEIR corpus of deterministic word sequences from the tiny model's vocabulary,
each query a prefix of one document's words (that document its one relevant one), written a line at a time
(bench_scale.py, default_path.py, bench_ray.py, bench_equivalence.py); and Zipf-distributed texts over a given
vocabulary (bm25.py, sparse.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np


def doc_text(i: int, words: list[str]) -> str:
    rng = random.Random(i)
    return " ".join(rng.choice(words) for _ in range(rng.randint(12, 48)))


def write_dataset(root: Path, size: int, queries: int, words: list[str], gzip_corpus: bool) -> Path:
    """The synthetic corpus, queries and qrels as a BEIR directory, written a line at a time."""
    import gzip

    (root / "qrels").mkdir(parents=True, exist_ok=True)
    name = "corpus.jsonl.gz" if gzip_corpus else "corpus.jsonl"
    with (gzip.open if gzip_corpus else open)(root / name, "wt", encoding="utf-8") as fh:
        for i in range(size):
            fh.write(json.dumps({"_id": f"d{i}", "title": "", "text": doc_text(i, words)}) + "\n")
    qids, qtexts, targets = synthetic_queries(size, queries, words)
    with open(root / "queries.jsonl", "w", encoding="utf-8") as fh:
        for q, text in zip(qids, qtexts, strict=True):
            fh.write(json.dumps({"_id": q, "text": text}) + "\n")
    with open(root / "qrels" / "test.tsv", "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        fh.writelines(f"{q}\td{t}\t1\n" for q, t in zip(qids, targets, strict=True))
    return root


def synthetic_queries(size: int, queries: int, words: list[str]) -> tuple[list[str], list[str], list[int]]:
    """Each query is a prefix of a random document's words; that document is the relevant one."""
    rng = random.Random(99)
    targets = [rng.randrange(size) for _ in range(queries)]
    qtexts = [" ".join(doc_text(t, words).split()[:8]) for t in targets]
    return [f"q{i}" for i in range(queries)], qtexts, targets


def vocabulary() -> list[str]:
    from evalsuite.testing.tiny_bert import WORDS

    return list(dict.fromkeys(WORDS))


def zipf_texts(vocab: list[str], docs: int, queries: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Texts of ``vocab``'s words drawn Zipf-like (exponent 1.1, in the list's order): documents of 8 to 59 words,
    then queries of 2 to 6, from one seeded generator."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, len(vocab) + 1) ** 1.1
    p /= p.sum()

    def text(n: int) -> str:
        return " ".join(vocab[i] for i in rng.choice(len(vocab), size=n, p=p))

    return [text(int(rng.integers(8, 60))) for _ in range(docs)], [
        text(int(rng.integers(2, 7))) for _ in range(queries)
    ]
