"""bench/sparse.py end to end at tiny sizes: both sides run in one process, the last line is the ratio, and each
side's top 10 per query equals a brute-force dot product over the model's dense SPLADE vectors computed here. No
timing or memory is asserted (shared machines are noisy); (b)'s bounded-memory search runs on a small corpus and
its figures are checked for consistency."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from evalsuite.testing.tiny_sparse import write_tiny_splade

REPO = Path(__file__).resolve().parents[2]
DOCS, QUERIES, K = 120, 12, 10


def _bench_corpus() -> tuple[list[str], list[str]]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_sparse", REPO / "bench" / "sparse.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    docs, queries = module.corpus(DOCS, QUERIES)
    return docs, queries


def test_sparse_benchmark_prints_the_ratio_and_both_sides_rank_as_a_brute_force_dot_product(tmp_path):
    """Bugs: a side searching another corpus or other queries, ids shifted by one, scores summed over the wrong
    axis, the ratio inverted or not last, (b) not searching the corpus it built."""
    from sentence_transformers import SparseEncoder as STSparse

    model_dir = write_tiny_splade(tmp_path / "splade")
    out = tmp_path / "sparse.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "sparse.py"),
            *("--docs", str(DOCS), "--queries", str(QUERIES), "--k", str(K), "--repeat", "1"),
            *("--big-docs", "3000", "--big-queries", "20", "--model", str(model_dir), "--out", str(out)),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = proc.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"ratio evalsuite/sentence-transformers (\d+\.\d\d)", last)
    assert match is not None, last
    figures = json.loads(out.read_text())
    seconds = figures["side_by_side"]["seconds"]
    assert float(match.group(1)) == round(seconds["evalsuite"] / seconds["sentence-transformers"], 2)

    # the oracle: the model's SPLADE vectors as dense rows, every query against every document, numpy float64
    docs, queries = _bench_corpus()
    st = STSparse(str(model_dir), device="cpu")
    d = st.encode(docs, convert_to_tensor=True).to_dense().numpy().astype(np.float64)
    q = st.encode(queries, convert_to_tensor=True).to_dense().numpy().astype(np.float64)
    scores = q @ d.T
    assert (scores > 0).sum(axis=1).min() > K  # every query has more than k candidates: the top k is a real cut
    tops = figures["side_by_side"]["top"]
    checked = 0
    for i, row in enumerate(scores):
        order = np.argsort(-row, kind="stable")
        if row[order[K - 1]] - row[order[K]] < 1e-4 * abs(row[order[K]]):
            continue  # a near tie at the cut: float32 and float64 may order it differently
        want = set(order[:K].tolist())
        assert set(tops["sentence-transformers"][i]) == want, i
        assert set(tops["evalsuite"][i]) == want, i
        ranked = sorted(tops["evalsuite"][i], key=lambda j: -row[j])
        assert tops["evalsuite"][i] == ranked, i  # best first
        checked += 1
    assert checked >= QUERIES - 2

    big = figures["bounded_memory"]
    assert big["docs"] == 3000 and big["queries"] == 20
    assert 25 * 3000 < big["postings"] <= 30 * 3000  # ~30 distinct ids per document
    assert big["dense_matrix_bytes"] == 30522 * 3000 * 4
    assert big["peak_rss_mib"] >= big["rss_with_corpus_mib"] > 0
