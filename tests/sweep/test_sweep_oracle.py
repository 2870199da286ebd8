"""Sweep cells against an independent computation: pooled vectors cut and re-normalized by hand,
brute-force numpy cosine, the documented tie order, nDCG@10 and recall@100 by hand; each cell's CI
against a loop bootstrap and its ``*`` marks against Benjamini-Hochberg done by hand.

Every text repeats one word the tiny random BERT knows as a single token, so its vectors are a function of
the token count; on a length-coded dataset (document i has i words, queries as many words as a relevant
document) pooling and dimension change the rankings measurably.
"""

import math

import numpy as np
import pytest

from evalsuite.run.pipeline import prepare
from evalsuite.run.spec import RunSpec
from evalsuite.sweep import parse_vary, plan_cells, run_sweep
from evalsuite.sweep.reports.data import sweep_to_dict
from evalsuite.sweep.reports.html import sweep_html
from evalsuite.sweep.reports.markdown import sweep_markdown

METRICS = ("ndcg@10", "recall@100")
LENGTHS = [n for n in range(1, 41)] + [5, 17, 29, 33]


@pytest.fixture(scope="module")
def coded(make_beir, tmp_path_factory):
    root = tmp_path_factory.mktemp("coded")
    docs = [{"_id": f"d{n:02d}", "title": "", "text": " ".join(["index"] * n)} for n in range(1, 41)]
    queries = [{"_id": f"q{j:03d}", "text": " ".join(["index"] * n)} for j, n in enumerate(LENGTHS)]
    qrels = [(f"q{j:03d}", f"d{n:02d}", 1) for j, n in enumerate(LENGTHS)]
    qrels += [(f"q{j:03d}", f"d{min(40, n + 1):02d}", 1) for j, n in enumerate(LENGTHS) if j % 3 == 0 and n < 40]
    return make_beir(root / "data", docs, queries, qrels)


@pytest.fixture(scope="module")
def swept(tiny_model_dir, coded):
    prepared = prepare(
        RunSpec(model=str(tiny_model_dir), dataset=str(coded), device="cpu", metrics=METRICS, use_cache=False)
    )
    axes = parse_vary(["pooling=last,mean", "dim=32,8,4"])
    cells = plan_cells(prepared.contract, axes, info=prepared.model)
    return prepared, run_sweep(prepared, cells, METRICS, axes=axes)


def _oracle(prepared, pooling, dim):
    """Metrics by hand: pooled vectors from the model, cut, re-normalized, searched and scored in numpy."""
    from evalsuite.encode.local import LocalEncoder

    ds = prepared.dataset
    enc = LocalEncoder(prepared.model, device="cpu", max_length=prepared.contract.max_length, progress=False)
    q = enc.encode([ds.queries[i] for i in ds.query_ids], poolings=[pooling])[pooling][:, :dim].astype(np.float64)
    d = enc.encode([ds.corpus[i] for i in ds.doc_ids], poolings=[pooling])[pooling][:, :dim].astype(np.float64)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    scores = q @ d.T
    per_query = {"ndcg@10": {}, "recall@100": {}}
    for i, qid in enumerate(ds.query_ids):
        # the documented order: score descending, then document id descending
        order = sorted(range(len(ds.doc_ids)), key=lambda j: (-scores[i, j], [-ord(c) for c in ds.doc_ids[j]]))
        ranked = [ds.doc_ids[j] for j in order]
        rel = {doc for doc, r in ds.qrels[qid].items() if r > 0}
        dcg = sum(1 / math.log2(r + 2) for r, doc in enumerate(ranked[:10]) if doc in rel)
        idcg = sum(1 / math.log2(r + 2) for r in range(min(10, len(rel))))
        per_query["ndcg@10"][qid] = dcg / idcg
        per_query["recall@100"][qid] = len(rel & set(ranked[:100])) / len(rel)
    return {m: float(np.mean(list(v.values()))) for m, v in per_query.items()}, per_query


def test_every_cell_matches_the_hand_computation(swept):
    prepared, result = swept
    base, base_pq = _oracle(prepared, "mean", 32)
    assert result.base.metrics == pytest.approx(base, abs=1e-6)
    seen = set()
    for cell in result.cells:
        c = cell.result.contract
        expected, per_query = _oracle(prepared, c.pooling, c.dim)
        seen.add(round(expected["ndcg@10"], 3))
        assert cell.result.metrics == pytest.approx(expected, abs=1e-6), cell.cell.name
        for m in METRICS:
            assert cell.delta[m] == pytest.approx(expected[m] - base[m], abs=1e-6)
            d = np.array([per_query[m][q] - base_pq[m][q] for q in sorted(base_pq[m])])
            assert cell.stats[m].comparison.ci.delta == pytest.approx(d.mean(), abs=1e-6)
    assert len(seen) >= 3  # the cells really differ: a sweep that scored the base everywhere would fail


def test_cell_intervals_agree_with_a_loop_bootstrap(swept):
    _, result = swept
    cell = result.cell("pooling=last")
    base = result.base.per_query["ndcg@10"]
    d = np.array([cell.result.per_query["ndcg@10"][q] - base[q] for q in sorted(base)])
    rng = np.random.default_rng(0)
    means = np.array([d[rng.integers(0, len(d), len(d))].mean() for _ in range(10_000)])
    low, high = np.quantile(means, [0.025, 0.975])
    ci = cell.stats["ndcg@10"].comparison.ci
    assert ci.delta < -0.05  # last-token pooling loses on this data
    assert (ci.low, ci.high) == (pytest.approx(low, abs=0.01), pytest.approx(high, abs=0.01))
    assert ci.low < ci.delta < ci.high


def test_marks_are_benjamini_hochberg_across_cells_by_hand(swept):
    _, result = swept
    family = [(c, m) for c in result.cells if not c.cell.same_as_base for m in METRICS]
    p = np.array([c.p_values[m] for c, m in family])
    order = np.argsort(p)
    n = len(p)
    q = np.empty(n)
    running = 1.0
    for rank in range(n, 0, -1):  # step-up from the largest p-value
        i = order[rank - 1]
        running = min(running, p[i] * n / rank)
        q[i] = running
    for (c, m), expected in zip(family, q, strict=True):
        assert c.stats[m].q_value == pytest.approx(expected)
        assert c.significant(result.alpha)[m] == (expected < result.alpha)
    data = sweep_to_dict(result)
    assert "Benjamini-Hochberg across every cell and metric" in data["significance"]["correction"]
    cell = next(x for x in data["cells"] if x["name"] == "pooling=last")
    assert set(cell["uncertainty"]["ndcg@10"]) == {
        "delta",
        "ci_low",
        "ci_high",
        "confidence",
        "sign_flip_p",
        "mde",
        "p_value",
        "q_value",
    }
    md = sweep_markdown(result)
    assert "adjusted for the false discovery rate across every cell and metric (Benjamini-Hochberg)" in md
    assert "## Uncertainty (95% CI of Δ vs base)" in md
    ci = result.cell("pooling=last").stats["ndcg@10"].comparison.ci
    assert f"{ci.delta:+.4f} [{ci.low:+.4f}, {ci.high:+.4f}]" in md
    html = sweep_html(result)
    assert "Error bars: the 95% bootstrap CI" in html and "Benjamini-Hochberg" in html
