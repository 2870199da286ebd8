"""Benchmark: evalsuite's sparse retriever against sentence-transformers' ``SparseEncoder`` on the same corpus and
queries, side by side in one process, and a bounded-memory check of evalsuite's sparse search (a script, not a
test).

    .venv/bin/python bench/sparse.py [--docs 5000] [--queries 200] [--k 10] [--repeat 2] [--model DIR]
                                     [--big-docs 1000000] [--big-queries 300] [--big-block 1024] [--out FILE]

(a) Side by side, on a SPLADE model (``--model``; by default a tiny random-weight one (``evalsuite.testing.tiny_sparse.write_tiny_splade``: a BERT
MLM saved by sentence-transformers itself; random weights are fine for timing)) and a synthetic corpus of ``docs``
texts over the model's own words. Both sides do the same work from texts: encode the corpus and the queries, then
search the top ``k`` by dot product. sentence-transformers: ``SparseEncoder.encode`` (sparse COO tensors) and
``util.semantic_search(score_function=dot_score)``; evalsuite: ``evalsuite.encode.sparse.SparseEncoder.encode``
(the ``sparse`` retriever's encoder) and ``evalsuite.retrieval.sparse_search.sparse_search`` (CSR, exact, only
documents sharing a term, the documented tie order, a ``Ranking``). The sides alternate ``repeat`` times and the
fastest of each is kept (after an untimed warm-up of each); the top-``k`` agreement of the two is printed.

(b) Bounded memory: a synthetic ``big-docs`` sparse corpus (a Zipf-like draw of ~30 active token ids per document
over a 30,522-token vocabulary, float32 weights; generated in blocks) searched by ``sparse_search`` with
``big-queries`` queries of ~20 ids, ``big-block`` at a time (the candidates of a block's queries are held
together: the peak grows with it, never with vocabulary x corpus); the peak RSS of the process (``resource.getrusage``) is printed beside the
dense vocabulary x corpus float32 matrix the search did not need. 0 skips it.

The last line is ``ratio evalsuite/sentence-transformers X.XX`` (wall times of (a)). ``--out`` writes the figures
and each side's top-``k`` document indices per query as JSON.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import zipf_texts  # noqa: E402

VOCAB = 30522  # BERT's vocabulary, as SPLADE models have it


def corpus(docs: int, queries: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Texts of the tiny model's words, Zipf-like: documents of 8 to 60 words, queries of 2 to 6."""
    from evalsuite.testing.tiny_bert import WORDS

    return zipf_texts([w for w in WORDS if w.isalpha()], docs, queries, seed)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_sentence_transformers(
    model: Any, docs: list[str], queries: list[str], k: int
) -> tuple[float, float, list[list[int]]]:
    """(encode seconds, search seconds, each query's top ``k`` document indices)."""
    from sentence_transformers.util import dot_score, semantic_search

    t0 = time.perf_counter()
    d = model.encode(docs, batch_size=32, convert_to_sparse_tensor=True, show_progress_bar=False)
    q = model.encode(queries, batch_size=32, convert_to_sparse_tensor=True, show_progress_bar=False)
    t1 = time.perf_counter()
    hits = semantic_search(q, d, top_k=k, score_function=dot_score)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, [[int(h["corpus_id"]) for h in row if float(h["score"]) > 0] for row in hits]


def run_evalsuite(encoder: Any, docs: list[str], queries: list[str], k: int) -> tuple[float, float, list[list[int]]]:
    """(encode seconds, search seconds, each query's top ``k`` document indices)."""
    from evalsuite.retrieval.sparse_search import sparse_search

    qids, dids = [f"q{i}" for i in range(len(queries))], [f"d{i}" for i in range(len(docs))]
    t0 = time.perf_counter()
    d = encoder.encode(docs)
    q = encoder.encode(queries)
    t1 = time.perf_counter()
    ranking = sparse_search(q, d, query_ids=qids, doc_ids=dids, vocab_size=encoder.head.vocab_size, k=k)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, [[int(x[1:]) for x in ranking.doc_ids[qid]] for qid in qids]


def side_by_side(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    import torch
    from sentence_transformers import SparseEncoder as STSparse

    from evalsuite.encode.sparse import SparseEncoder
    from evalsuite.model import resolve_model
    from evalsuite.testing.tiny_sparse import write_tiny_splade

    torch.set_num_threads(args.threads)
    model_dir = args.model or write_tiny_splade(tmp / "splade")
    docs, queries = corpus(args.docs, args.queries)
    print(
        f"(a) SPLADE {'tiny, random weights' if args.model is None else model_dir}; corpus {len(docs):,} documents, "
        f"{len(queries):,} queries, k {args.k}, torch threads {args.threads}"
    )
    st = STSparse(str(model_dir), device="cpu")
    ours = SparseEncoder.of(
        resolve_model(str(model_dir)),
        max_length=st.max_seq_length,
        device="cpu",
        batch_size=32,
        trust_remote_code=False,
    )
    run_sentence_transformers(st, docs[:64], queries[:8], args.k)  # warm both up (first batches, allocations)
    run_evalsuite(ours, docs[:64], queries[:8], args.k)
    sides = ("sentence-transformers", "evalsuite")
    best = {side: float("inf") for side in sides}
    phases = {side: (0.0, 0.0) for side in sides}  # (encode, search) of the fastest repeat
    theirs_top: list[list[int]] = []
    ours_top: list[list[int]] = []
    for _ in range(args.repeat):
        e1, s1, theirs_top = run_sentence_transformers(st, docs, queries, args.k)
        e2, s2, ours_top = run_evalsuite(ours, docs, queries, args.k)
        for side, (e, s) in zip(sides, ((e1, s1), (e2, s2)), strict=True):
            if e + s < best[side]:
                best[side], phases[side] = e + s, (e, s)
        print(f"  sentence-transformers {e1 + s1:.2f} s   evalsuite {e2 + s2:.2f} s")
    agree = float(np.mean([len(set(a) & set(b)) / max(1, len(a)) for a, b in zip(theirs_top, ours_top, strict=True)]))
    (te, ts), (oe, os_) = phases["sentence-transformers"], phases["evalsuite"]
    print(
        f"sentence-transformers {best['sentence-transformers']:.2f} s (encode {te:.2f} s + semantic_search, dot "
        f"score, {ts:.2f} s)"
    )
    print(f"evalsuite             {best['evalsuite']:.2f} s (encode {oe:.2f} s + CSR search, tie order, {os_:.2f} s)")
    print(f"top-{args.k} agreement {agree:.4f}")
    return {
        "docs": len(docs),
        "queries": len(queries),
        "k": args.k,
        "seconds": best,
        "phases": {side: {"encode": round(e, 4), "search": round(x, 4)} for side, (e, x) in phases.items()},
        "agreement": agree,
        "top": {"sentence-transformers": theirs_top, "evalsuite": ours_top},
    }


def big_corpus(n: int, active: int, rng: np.random.Generator, block: int = 100_000) -> list[tuple[Any, Any]]:
    """``n`` sparse vectors of about ``active`` ids each (Zipf-like over the vocabulary, ids ascending, unique),
    drawn ``block`` at a time; each vector is a pair of views into its block's arrays."""
    p = 1.0 / np.arange(1, VOCAB + 1) ** 0.8
    p /= p.sum()
    out: list[tuple[Any, Any]] = []
    for start in range(0, n, block):
        m = min(block, n - start)
        ids = np.sort(rng.choice(VOCAB, size=(m, active), p=p), axis=1)
        weights = rng.random((m, active), dtype=np.float32) + np.float32(0.01)
        keep = np.ones((m, active), dtype=bool)
        keep[:, 1:] = ids[:, 1:] != ids[:, :-1]  # an id drawn twice is kept once
        out.extend((ids[row][keep[row]], weights[row][keep[row]]) for row in range(m))
    return out


def bounded_memory(args: argparse.Namespace) -> dict[str, Any]:
    from evalsuite.retrieval.sparse_search import sparse_search

    rng = np.random.default_rng(1)
    before = peak_rss_mib()
    t0 = time.perf_counter()
    docs = big_corpus(args.big_docs, 30, rng)
    queries = big_corpus(args.big_queries, 20, rng)
    built = time.perf_counter() - t0
    active = sum(len(i) for i, _ in docs)
    after_build = peak_rss_mib()
    print(
        f"(b) synthetic sparse corpus: {len(docs):,} documents, {active / len(docs):.1f} active ids per document over "
        f"{VOCAB:,} token ids ({active:,} postings), {len(queries):,} queries; built in {built:.1f} s"
    )
    t0 = time.perf_counter()
    ranking = sparse_search(
        queries,
        docs,
        query_ids=[f"q{i}" for i in range(len(queries))],
        doc_ids=[f"d{i}" for i in range(len(docs))],
        vocab_size=VOCAB,
        k=args.k,
        block=args.big_block,
    )
    searched = time.perf_counter() - t0
    peak = peak_rss_mib()
    dense = VOCAB * len(docs) * 4
    retrieved = sum(len(ranking.doc_ids[q]) for q in ranking.doc_ids) / max(1, len(ranking.doc_ids))
    print(
        f"sparse_search {searched:.1f} s ({args.big_block} queries a block), {retrieved:.1f} documents retrieved per "
        f"query (k {args.k})"
    )
    print(
        f"peak RSS {peak:,.0f} MiB (before the corpus {before:,.0f} MiB, with the corpus's vectors {after_build:,.0f} "
        f"MiB); the dense vocabulary x corpus float32 matrix it did not need: {dense / 2**30:,.1f} GiB"
    )
    return {
        "docs": len(docs),
        "postings": active,
        "queries": len(queries),
        "block": args.big_block,
        "search_seconds": round(searched, 2),
        "peak_rss_mib": round(peak, 1),
        "rss_with_corpus_mib": round(after_build, 1),
        "dense_matrix_bytes": dense,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="torch threads for both sides' encoding")
    ap.add_argument("--big-docs", type=int, default=1_000_000, help="(b)'s corpus size; 0 skips (b)")
    ap.add_argument("--big-queries", type=int, default=300)
    ap.add_argument(
        "--big-block", type=int, default=1024, help="(b): queries scored at once (sparse_search's block, its default)"
    )
    ap.add_argument("--model", type=Path, default=None, help="a SPLADE SparseEncoder directory (default: the tiny one)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures and both sides' top k as JSON")
    args = ap.parse_args()
    figures: dict[str, Any] = {}
    if args.big_docs:  # first, so its peak RSS is the search's own and not the models'
        figures["bounded_memory"] = bounded_memory(args)
    with TemporaryDirectory() as tmp:
        figures["side_by_side"] = side_by_side(args, Path(tmp))
    s = figures["side_by_side"]["seconds"]
    ratio = s["evalsuite"] / s["sentence-transformers"]
    figures["ratio"] = round(ratio, 4)
    if args.out is not None:
        args.out.write_text(json.dumps(figures))
    print(f"ratio evalsuite/sentence-transformers {ratio:.2f}")


if __name__ == "__main__":
    main()
