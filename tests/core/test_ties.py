"""Duplicate texts: the metrics equal an independent re-scoring of the run.trec the same run writes.

Twenty relevant documents have an exact twin (same vector, unjudged); for half of them the twin's
id sorts after the relevant one's and for half before, so the tie order puts the relevant document
above its twin for some queries and below it for others, also across the metric cut-offs.
"""

import itertools
import math

import numpy as np
import pytest

from evalsuite.reports.trec import trec_run
from evalsuite.retrieval.search import search
from evalsuite.scoring.metrics import evaluate, search_depth

METRICS = ["ndcg@3", "ndcg@10", "mrr@10", "recall@3", "recall@10"]


def corpus():
    rng = np.random.default_rng(7)
    ids, vecs = [], []
    for i in range(20):
        v = rng.integers(-2, 3, size=8)  # small integers: scores are exact, twins tie exactly
        ids += [f"r{i:02d}", f"r{i:02d}~dup" if i % 2 else f"a{i:02d}dup"]  # "~" sorts after, "a" before "r"
        vecs += [v, v]
    for i in range(30):
        ids.append(f"f{i:02d}")
        vecs.append(rng.integers(-2, 3, size=8))
    queries = np.array([vecs[2 * i] + rng.integers(-1, 2, size=8) for i in range(12)], dtype=np.float32)
    qrels = {}
    for qi in range(12):
        rel = {f"r{(qi + j) % 20:02d}": 1 + (j % 2) for j in range(3)}  # grades 1 and 2
        rel[f"f{qi:02d}"] = 0  # judged non-relevant
        rel[f"f{qi + 1:02d}"] = -1
        qrels[f"q{qi}"] = rel
    return queries, np.array(vecs, dtype=np.float32), ids, qrels


def read_like_trec_eval(text: str) -> dict[str, list[str]]:
    """Parse a run the way trec_eval does: score read as float32, rank column ignored, sort by score
    descending and then docno descending (comp_sim_docno)."""
    rows: dict[str, list[tuple[np.float32, str]]] = {}
    for line in text.splitlines():
        qid, _q0, docno, _rank, score, _tag = line.split()
        rows.setdefault(qid, []).append((np.float32(float(score)), docno))
    out = {}
    for qid, hits in rows.items():
        hits.sort(key=lambda h: h[1], reverse=True)
        hits.sort(key=lambda h: -float(h[0]))  # stable
        out[qid] = [d for _, d in hits]
    return out


def oracle(qrels: dict[str, dict[str, int]], run: dict[str, list[str]], metric: str) -> dict[str, float]:
    """nDCG (gain = grade, Jarvelin), MRR and recall at k; grades below 1 are non-relevant."""
    name, k = metric.split("@")
    k = int(k)
    out = {}
    for qid, judged in qrels.items():
        rel = {d: g for d, g in judged.items() if g >= 1}
        top = run.get(qid, [])[:k]
        if name == "recall":
            out[qid] = sum(d in rel for d in top) / len(rel)
        elif name == "mrr":
            out[qid] = next((1 / (r + 1) for r, d in enumerate(top) if d in rel), 0.0)
        else:
            dcg = sum(rel.get(d, 0) / math.log2(r + 2) for r, d in enumerate(top))
            ideal = sorted(rel.values(), reverse=True)[:k]
            out[qid] = dcg / sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
    return out


@pytest.mark.parametrize("similarity", ["dot", "l2"])
def test_metrics_equal_the_rescored_run_file(tmp_path, similarity):
    queries, docs, ids, qrels = corpus()
    qids = list(qrels)
    ranking = search(queries, docs, query_ids=qids, doc_ids=ids, k=search_depth(METRICS), similarity=similarity)
    # the test exercises what it claims: tied twins at the top, some straddling a cut-off, twins both ways round
    tied_at = [(q, r) for q in qids for r in range(12) if ranking.scores[q][r] == ranking.scores[q][r + 1]]
    assert any(r == 2 for _, r in tied_at) and any(r == 9 for _, r in tied_at)
    firsts = {ranking.doc_ids[q][0] for q in qids}
    assert any(d.startswith("r") for d in firsts) and any(d.endswith("dup") for d in firsts)

    agg, per_query = evaluate(qrels, ranking, METRICS)
    path = tmp_path / "run.trec"
    path.write_text(trec_run(ranking))
    text = path.read_text()

    written = read_like_trec_eval(text)
    assert written == {q: list(ranking.doc_ids[q]) for q in qids}  # trec_eval reads the written order
    for q in qids:  # strictly decreasing as float32: no tool has a tie to break
        s = [np.float32(float(line.split()[4])) for line in text.splitlines() if line.split()[0] == q]
        assert all(a > b for a, b in itertools.pairwise(s))
    for m in METRICS:
        expected = oracle(qrels, written, m)
        assert per_query[m] == pytest.approx(expected, abs=1e-12), m
        assert agg[m] == pytest.approx(sum(expected.values()) / len(expected), abs=1e-12), m

    # ranx reading the file: its own TREC reader (what Run.from_file parses with, minus numba's slow typed
    # dicts) and its kernels, which re-sort each query by the written score
    from ranx import evaluate as ranx_evaluate
    from ranx.utils import run_file_to_dict

    read = run_file_to_dict(str(path))
    rescored = ranx_evaluate({q: qrels[q] for q in qids}, {q: read[q] for q in qids}, METRICS, return_mean=False)
    for m in METRICS:
        assert dict(zip(qids, rescored[m], strict=False)) == pytest.approx(per_query[m], abs=1e-12), m
    for q in qids:  # the symptom: a relevant document at rank 1 of the run file means mrr 1
        if written[q][0] in {d for d, g in qrels[q].items() if g >= 1}:
            assert per_query["mrr@10"][q] == 1.0
