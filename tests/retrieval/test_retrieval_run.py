"""Retrievers in a run, end to end on the tiny random BERT and the bundled dataset: bm25 encodes nothing, hybrid
equals a brute-force RRF of the dense run and the bm25 run, the result cache keys the retriever (and a dense key
stays what it was), the CLI records the retriever and refuses settings that do not apply (exit 2), and a sweep
varies the retriever over one forward pass."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from evalsuite.cli import main
from evalsuite.retrieval.retrievers import parse_retrieval
from evalsuite.retrieval.retrievers.bm25 import BM25Settings, bm25_ranking
from evalsuite.run.pipeline import prepare, run
from evalsuite.run.spec import RunSpec
from evalsuite.scoring.metrics import evaluate
from evalsuite.testing.builders import run_argv

from .conftest import Texts
from .test_fusion import _ordered, _rrf

METRICS = ("ndcg@10", "recall@100")


@pytest.fixture(scope="module")
def spec(tiny_model_dir, minibeir_dir, tmp_path_factory) -> RunSpec:
    return RunSpec(
        model=str(tiny_model_dir),
        dataset=str(minibeir_dir),
        device="cpu",
        metrics=METRICS,
        cache_dir=str(tmp_path_factory.mktemp("cache")),
    )


def test_hybrid_is_rrf_of_the_dense_and_bm25_runs(spec: RunSpec, minibeir_texts: Texts) -> None:
    dense = run(spec)
    hybrid = run(spec.replace(retrieval="hybrid"))
    bm25, _ = bm25_ranking(BM25Settings(), minibeir_texts, 100)
    want = _ordered(_rrf([dense.ranking, bm25], 60), 100)
    for q, hits in want.items():
        assert hybrid.ranking.doc_ids[q] == tuple(d for d, _ in hits), q
    assert hybrid.metrics == pytest.approx(evaluate(dense.dataset.qrels, hybrid.ranking, METRICS)[0])
    assert hybrid.contract.retrieval == parse_retrieval("hybrid").text
    assert hybrid.contract.diff(dense.contract) == {"retrieval": (hybrid.contract.retrieval, "dense")}
    entry = hybrid.manifest["retrieval"]
    assert entry["kind"] == "hybrid" and entry["fusion"] == "rrf" and entry["fusion_k"] == 60
    assert entry["fuse"] == ["dense", "bm25"] and entry["bm25"]["documents"] == 458
    # each component scored with the run's metrics, and the fusion's gain over the best one with its CI
    assert entry["components"]["dense"] == pytest.approx(dense.metrics, abs=1e-6)
    bm25_metrics = evaluate(dense.dataset.qrels, bm25, METRICS)[0]
    assert entry["components"]["bm25"] == pytest.approx(bm25_metrics, abs=1e-6)
    for m in METRICS:
        gain = entry["gain"][m]
        best = max(("dense", "bm25"), key=lambda n: entry["components"][n][m])
        assert gain["over"] == best
        assert gain["ci"]["delta"] == pytest.approx(hybrid.metrics[m] - entry["components"][best][m], abs=1e-6)
        assert gain["ci"]["low"] <= gain["ci"]["delta"] <= gain["ci"]["high"]
    # the result cache: a second run reads the fused ranking back; its key names the retriever
    again = run(spec.replace(retrieval="hybrid"))
    assert again.timing["result_cache"]["status"] == "hit"
    assert again.metrics == hybrid.metrics and again.ranking.doc_ids == hybrid.ranking.doc_ids
    assert again.timing["result_cache"]["key"] != dense.timing["result_cache"]["key"]
    # ... with the components' metrics and the fusion's gain that run computed, not dropped
    assert again.manifest["retrieval"]["components"] == entry["components"]
    assert again.manifest["retrieval"]["gain"] == json.loads(json.dumps(entry["gain"]))
    rrf20 = run(spec.replace(retrieval="hybrid", fusion_k=20))
    assert rrf20.timing["result_cache"]["status"] == "miss"  # another k: another key


def test_a_dense_cache_key_has_no_retrieval_fields(spec: RunSpec) -> None:
    from evalsuite.run.cache.scoring import score_fields

    prepared = prepare(spec)
    import numpy as np

    q = np.zeros((len(prepared.dataset.query_ids), 4), dtype=np.float32)
    d = np.zeros((len(prepared.dataset.doc_ids), 4), dtype=np.float32)
    kw = {"k": 100, "similarity": "cosine", "index": "flat", "metrics": METRICS}
    dense = score_fields(prepared.dataset, q, d, **kw)  # type: ignore[arg-type]
    assert not {"retrieval", "corpus", "retrieval_libraries", "retrieval_code"} & set(dense)
    bm25 = score_fields(prepared.dataset, q, d, **kw, retrieval=parse_retrieval("bm25").text)  # type: ignore[arg-type]
    assert bm25["corpus"] == prepared.dataset.identity.sha256 and "bm25s" in bm25["retrieval_libraries"]


def test_bm25_run_from_the_cli_encodes_nothing(tiny_model_dir, minibeir_dir, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    argv = run_argv(tiny_model_dir, minibeir_dir, "--retrieval", "bm25", "--bm25-k1", "1.2", out=out)
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "retrieval bm25:k1=1.2,b=0.75,method=lucene,stopwords=en,stemmer=none" in printed
    manifest = json.loads((out / "manifest.json").read_text())
    results = json.loads((out / "results.json").read_text())
    text = "bm25:k1=1.2,b=0.75,method=lucene,stopwords=en,stemmer=none"
    assert manifest["contract"]["retrieval"] == results["manifest"]["contract"]["retrieval"] == text
    assert manifest["retrieval"]["bm25_k1"] == 1.2 and manifest["retrieval"]["bm25"]["vocabulary"] > 1000
    assert results["timing"]["documents"]["texts"] == 0  # no forward pass: bm25 reads the texts
    assert "fingerprint" not in manifest
    ranking = [line.split() for line in (out / "run.trec").read_text().splitlines()]
    assert len(ranking) > 0 and all(float(r[4]) > 0 for r in ranking)


@pytest.mark.parametrize(
    "extra, needle",
    [
        (("--retrieval", "bm25", "--fusion-k", "5"), "fusion_k (--fusion-k) does not apply to retrieval 'bm25'"),
        (("--retrieval", "hybrid", "--fuse", "dense"), "two or more different retrievers"),
        (("--retrieval", "hybrid", "--fusion", "wsum", "--fusion-weights", "1,2,3"), "gives 3 weights for 2"),
    ],
)
def test_settings_that_do_not_apply_are_usage_errors(
    tiny_model_dir, minibeir_dir, tmp_path, capsys, extra, needle
) -> None:
    out = tmp_path / "out"
    assert main(run_argv(tiny_model_dir, minibeir_dir, *extra, out=out)) == 2
    assert needle in capsys.readouterr().err
    assert not out.exists()  # nothing half-written


def test_sweep_varies_the_retriever_over_one_forward_pass(spec: RunSpec, minibeir_texts: Texts) -> None:
    from evalsuite.sweep import parse_vary, plan_cells, run_sweep

    prepared = prepare(spec)
    axes = parse_vary(["retrieval=bm25,hybrid:fusion=wsum"])
    cells = plan_cells(prepared.contract, axes, grid=False, info=prepared.model)
    result = run_sweep(prepared, cells, METRICS, axes=axes)
    assert result.stats.passes_by_role == {"query": 1, "document": 1}
    alone = run(spec.replace(retrieval="bm25", use_cache=False))
    bm25 = result.cell("retrieval=bm25")
    assert bm25.result.contract.retrieval == alone.contract.retrieval
    assert bm25.result.metrics == pytest.approx(alone.metrics)
    assert set(bm25.stats) == set(METRICS)  # a delta against the dense base with its CI, as every cell has
    wsum = result.cell("retrieval=hybrid:fusion=wsum")
    assert wsum.result.contract.retrieval.startswith("hybrid:fuse=dense+bm25,fusion=wsum,weights=0.5+0.5")
    # sweep.json: each retriever cell's retrieval entry, the BM25 index's bytes per document beside its quality,
    # equal to bm25s's own index of the same texts measured here
    import bm25s

    from evalsuite.sweep.reports.data import sweep_to_dict

    texts = list(minibeir_texts.docs)
    own = bm25s.BM25()
    own.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    want = sum(np.asarray(own.scores[k]).nbytes for k in ("data", "indices", "indptr")) / len(texts)
    cells = {c["name"]: c for c in sweep_to_dict(result)["cells"]}
    assert cells["retrieval=bm25"]["retrieval"]["bm25"]["index_bytes_per_document"] == pytest.approx(want, abs=0.01)
    assert want > 50  # a real index: tens of stored scores per document
    assert set(cells["retrieval=hybrid:fusion=wsum"]["retrieval"]["components"]) == {"dense", "bm25"}


def test_sweep_axes_of_the_retrieval_settings_equal_runs_with_those_settings(spec: RunSpec) -> None:
    """fusion_k=20 over the dense base is RRF of dense and bm25 with k 20; fusion_weight=0.7 is wsum 0.7/0.3; each
    cell scores exactly what a run given those flags scores, over the base's one forward pass."""
    from evalsuite.sweep import parse_vary, plan_cells, run_sweep

    prepared = prepare(spec)
    axes = parse_vary(["fusion_k=20", "fusion_weight=0.7", "fusion=mnz"])
    cells = plan_cells(prepared.contract, axes, grid=False, info=prepared.model)
    result = run_sweep(prepared, cells, METRICS, axes=axes)
    assert result.stats.passes_by_role == {"query": 1, "document": 1}
    for cell, flags in (
        ("fusion_k=20", {"fusion_k": 20}),
        ("fusion_weight=0.7", {"fusion": "wsum", "fusion_weights": (0.7, 0.3)}),
        ("fusion=mnz", {"fusion": "mnz"}),
    ):
        alone = run(spec.replace(retrieval="hybrid", **flags))
        got = result.cell(cell).result
        assert got.contract.retrieval == alone.contract.retrieval, cell
        assert got.metrics == pytest.approx(alone.metrics), cell
        assert got.ranking.doc_ids == alone.ranking.doc_ids, cell


def _results_table(md: str) -> dict[str, dict[str, str]]:
    """report.md's Results table: row name -> column header -> text."""
    section = md.split("## Results\n\n", 1)[1]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    end = next((i for i, ln in enumerate(lines) if i > 1 and not lines[i - 1].startswith("|")), len(lines))
    head = [h.strip() for h in lines[0].strip("|").split("|")]
    rows = {}
    for ln in lines[2:end]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if len(cells) != len(head):
            break
        rows[cells[0]] = dict(zip(head, cells, strict=True))
    return rows


def test_sweep_report_shows_each_cells_index_bytes_per_document(spec: RunSpec, minibeir_texts: Texts, tmp_path) -> None:
    """report.md's Results table has each cell's index bytes per document beside its quality: the values
    sweep.json records (bm25: its retrieval entry; the dense base: its float32 bytes per vector), checked
    against the dense vectors and bm25s's own index measured here."""
    import bm25s

    from evalsuite.sweep import parse_vary, plan_cells, run_sweep
    from evalsuite.sweep.reports import write_sweep_reports

    prepared = prepare(spec)
    axes = parse_vary(["retrieval=dense,bm25,hybrid"])
    cells = plan_cells(prepared.contract, axes, grid=False, info=prepared.model)
    result = run_sweep(prepared, cells, METRICS, axes=axes)
    paths = write_sweep_reports(result, tmp_path)
    recorded = json.loads(paths["sweep.json"].read_text())
    rows = _results_table(paths["report.md"].read_text())
    column = "index bytes/doc"
    assert set(rows) == {"base", "retrieval=dense (= base)", "retrieval=bm25", "retrieval=hybrid"}
    assert all(r["ndcg@10"] != "-" for r in rows.values())  # beside its quality, on the same row
    by_name = {c["name"]: c for c in recorded["cells"]}

    # dense: one float32 vector per document, as the vectors the run searched hold them
    dense_run = run(spec.replace(use_cache=False))
    vectors = np.asarray(dense_run.doc_vectors, dtype=np.float32)
    dense_bytes = vectors.nbytes / len(vectors)
    assert dense_bytes == vectors.shape[1] * 4
    assert recorded["base"]["storage"]["bytes_per_vector"] == dense_bytes
    assert float(rows["base"][column]) == dense_bytes
    assert float(rows["retrieval=dense (= base)"][column]) == dense_bytes
    assert "retrieval" not in by_name["retrieval=dense"]  # dense records none: its bytes per vector stand

    # bm25: the retrieval entry's figure, equal to bm25s's own score matrix over the same texts
    bm25_recorded = by_name["retrieval=bm25"]["retrieval"]["bm25"]["index_bytes_per_document"]
    assert float(rows["retrieval=bm25"][column]) == pytest.approx(bm25_recorded, abs=0.005)
    texts = list(minibeir_texts.docs)
    own = bm25s.BM25()
    own.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    want = sum(np.asarray(own.scores[k]).nbytes for k in ("data", "indices", "indptr")) / len(texts)
    assert float(rows["retrieval=bm25"][column]) == pytest.approx(want, abs=0.01)

    # hybrid (RRF of dense and bm25): both indexes are kept, so their bytes add up
    hybrid_recorded = by_name["retrieval=hybrid"]["retrieval"]["bm25"]["index_bytes_per_document"]
    assert float(rows["retrieval=hybrid"][column]) == pytest.approx(dense_bytes + hybrid_recorded, abs=0.005)

    # report.html's Results table, as a browser reads it (its first table after the heading): the same column
    page = paths["report.html"].read_text()
    results = page[page.index("<h2>Results</h2>") :]
    results = results[: results.index("</table>")]
    cells = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", results)]
    header, body = cells[0], {row[0]: row for row in cells[1:]}
    assert header[-1] == column and set(body) == set(rows)
    for name, row in rows.items():
        assert body[name][header.index(column)] == row[column]
