"""The index axis: crossed with dim, no forward pass of its own, each index measured against exact search."""

import json

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.cli import main
from evalsuite.run.pipeline import prepare
from evalsuite.run.spec import RunSpec
from evalsuite.sweep import parse_axis, parse_vary, plan_cells, plan_passes, run_sweep
from evalsuite.sweep.reports import write_sweep_reports
from evalsuite.sweep.reports.index import pareto_front
from evalsuite.testing.builders import make_contract, run_argv

METRICS = ("ndcg@10", "recall@100")
INDEXES = "index=flat,hnsw,ivfpq,sq8,binary,binary+rescore=100"
BASE = make_contract(query_prefix="q: ", max_length=64, dim=32)


def test_index_values_keep_their_parameters_together():
    axis = parse_axis("index=flat,hnsw:M=16,ef=32,ivf:nlist=64,nprobe=8,binary+rescore=100")
    assert axis.labels == ("flat", "hnsw:M=16,ef=32", "ivf:nlist=64,nprobe=8", "binary+rescore=100")
    assert [v.value for v in axis.values] == [
        "flat",
        "hnsw:M=16,efc=40,ef=32",
        "ivf:nlist=64,nprobe=8",
        "binary+rescore=100",
    ]
    assert parse_axis('index=["sq8", "ivfpq:m=8,nbits=4"]').labels == ("sq8", "ivfpq:m=8,nbits=4")
    with pytest.raises(SpecError, match="--vary index: index 'annoy': unknown index kind"):
        parse_axis("index=flat,annoy")


@pytest.mark.parametrize("order", [["index=flat,sq8", "dim=32,16,8"], ["dim=32,16,8", "index=flat,sq8"]])
def test_index_is_crossed_with_dim_and_other_axes_stay_one_at_a_time(order):
    cells = plan_cells(BASE, parse_vary(["pooling=cls", *order]))
    names = [c.name for c in cells]
    assert names[0] == "pooling=cls" and len(cells) == 1 + 2 * 3
    crossed = {(c.contract.index, c.contract.dim) for c in cells[1:]}
    assert crossed == {(i, d) for i in ("flat", "sq8") for d in (32, 16, 8)}
    assert [c.name for c in cells if c.same_as_base] in (["index=flat,dim=32"], ["dim=32,index=flat"])
    assert len(plan_passes(BASE, cells)) == 2  # one query pass, one document pass: indexes reuse the vectors


def test_index_alone_needs_no_forward_pass():
    cells = plan_cells(BASE, parse_vary([INDEXES]))
    assert [c.contract.index for c in cells][1] == "hnsw:M=32,efc=40,ef=64"
    assert len(plan_passes(BASE, cells)) == 2


def test_pareto_front_keeps_the_points_nothing_beats():
    points = [(4.0, 0.3), (4.0, 0.8), (16.0, 0.7), (32.0, 0.97), (128.0, 1.0), (400.0, 1.0), (10.0, 0.9)]
    assert pareto_front(points) == [1, 6, 3, 4]


@pytest.fixture(scope="module")
def swept(tiny_model_dir, minibeir_dir, tmp_path_factory):
    spec = RunSpec(
        model=str(tiny_model_dir),
        dataset=str(minibeir_dir),
        device="cpu",
        metrics=METRICS,
        cache_dir=str(tmp_path_factory.mktemp("cache")),
    )
    prepared = prepare(spec)
    axes = parse_vary([INDEXES, "dim=32,16"])
    cells = plan_cells(prepared.contract, axes, info=prepared.model)
    return prepared, run_sweep(prepared, cells, METRICS, axes=axes, keep_vectors=True)


def test_one_forward_pass_per_role_serves_every_index_and_dim(swept):
    prepared, result = swept
    assert len(result.cells) == 12
    assert result.stats.passes_by_role == {"query": 1, "document": 1}
    assert result.stats.texts_encoded_by_role == {
        "query": len(prepared.dataset.queries),
        "document": len(prepared.dataset.corpus),
    }


def test_flat_is_the_exact_search_with_recall_one(swept):
    _, result = swept
    flat = result.cell("index=flat,dim=32")
    assert flat.cell.same_as_base and flat.result is result.base
    for dim in (32, 16):
        c = result.cell(f"index=flat,dim={dim}")
        assert c.index is not None and set(c.index.report.recall.values()) == {1.0}
        assert c.index.delta_vs_flat == {m: 0.0 for m in METRICS}
        assert {m: c.index.vs_flat[m].p_value for m in METRICS} == {m: 1.0 for m in METRICS}


def _recall_numpy(result_vectors, ranking, qids, dids, k, tie=1e-6):
    """Independent recall@k: a returned document counts when its numpy score reaches the k-th best
    numpy score less ``tie`` (ties at the k-th place are any of the tied documents), capped at k."""
    q, d = result_vectors
    scores = q @ d.T
    pos = {x: i for i, x in enumerate(dids)}
    shares = []
    for qi, qid in enumerate(qids):
        kth = np.sort(scores[qi])[::-1][k - 1]
        got = [pos[x] for x in list(ranking[qid])[:k]]
        shares.append(min(k, sum(scores[qi, j] >= kth - tie for j in got)) / k)
    return float(np.mean(shares))


def test_each_index_recall_is_measured_against_an_independent_exact_search(swept):
    prepared, result = swept
    ds = prepared.dataset
    flat = {32: result.cell("index=flat,dim=32").result, 16: result.cell("index=flat,dim=16").result}
    for c in result.cells:
        dim = c.result.contract.dim
        vectors = (flat[dim].query_vectors, flat[dim].doc_vectors)
        report = c.index.report
        # the ranking written for the cell is the index's depth-100 search: its recall@100 is the report's.
        # The tiny model's cosines crowd near 1, so a document may sit right at the 1e-6 tie margin below the
        # 100th score; FAISS and numpy round that score differently (~1e-7), so such a document may count in
        # either. The report must lie between the counts with a margin of 0.5e-6 and of 1.5e-6, which differ
        # by a few documents in all.
        strict, loose = (
            _recall_numpy(vectors, c.result.ranking, ds.query_ids, ds.doc_ids, 100, tie=tie) for tie in (5e-7, 1.5e-6)
        )
        assert strict - 1e-9 <= report.recall[100] <= loose + 1e-9, c.name
        assert loose - strict <= 5 / (100 * len(ds.query_ids)), c.name
        for m in METRICS:
            ci = c.index.vs_flat[m].ci
            assert ci.delta == pytest.approx(c.result.metrics[m] - flat[dim].metrics[m])  # index minus flat
            assert ci.low <= ci.delta <= ci.high and ci.n_queries == len(ds.query_ids)
            if c.result.contract.index == "flat":
                assert ci.low == ci.high == 0.0
    for dim in (32, 16):
        plain = result.cell(f"index=binary,dim={dim}").index.report.recall[10]
        assert result.cell(f"index=binary+rescore=100,dim={dim}").index.report.recall[10] >= plain
        assert plain < 1.0  # sign bits lose neighbours: measured, not assumed


def test_the_manifest_names_the_index_and_its_effective_parameters(swept):
    _, result = swept
    c = result.cell("index=ivfpq,dim=16").result
    assert c.contract.index == "ivfpq:nlist=256,nprobe=16,nbits=8"
    assert c.manifest["contract"]["index"] == c.contract.index
    entry = c.manifest["index"]
    assert entry["type"] == c.contract.index and entry["dim"] == 16
    assert entry["effective"] == "ivfpq:nlist=11,nprobe=11,m=2,nbits=3"  # 458 documents: clamped, and said so
    assert any("nlist 256 -> 11" in n for n in entry["notes"])


def test_reports_hold_the_index_table_the_matryoshka_table_and_pareto_plots(swept, tmp_path):
    _, result = swept
    paths = write_sweep_reports(result, tmp_path)
    data = json.loads(paths["sweep.json"].read_text())
    hnsw = next(c for c in data["cells"] if c["name"] == "index=hnsw,dim=16")
    assert set(hnsw["index"]) >= {
        "recall_vs_exact",
        "build_seconds",
        "query_latency",
        "batch_latency",
        "bytes_per_vector",
        "bytes_1m_vectors",
        "delta_vs_flat",
        "vs_flat",
        "effective",
    }
    assert set(hnsw["index"]["vs_flat"]["ndcg@10"]["ci"]) >= {"delta", "low", "high"}
    assert hnsw["index"]["bytes_1m_vectors"] > 16 * 4 * 1_000_000
    md = paths["report.md"].read_text()
    assert "## Index cost" in md and "## Matryoshka x quantization" in md and "vs flat [95% CI]" in md
    pivot = md.split("## Matryoshka x quantization")[1]
    assert "| 16 |" in pivot and "binary+rescore=100" in pivot
    html = paths["report.html"].read_text()
    assert html.count("<figure>") == 2 + 2 and html.count("<figcaption>Pareto plot") == 2


def test_sweep_command_prints_the_index_table(tiny_model_dir, minibeir_dir, tmp_path, capsys):
    code = main(
        run_argv(
            str(tiny_model_dir),
            str(minibeir_dir),
            "--metrics",
            "ndcg@10",
            "--vary",
            "index=flat,sq8,binary",
            "--vary",
            "dim=32,16",
            "--out",
            str(tmp_path / "out"),
            command="sweep",
            cache_dir=str(tmp_path / "cache"),
        )
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "index cost" in text and "recall@10 vs exact" in text and "dim \\ index" in text
    assert "forward passes 1 query + 1 document" in text


def test_a_base_on_another_index_is_measured_against_flat_search_it_never_lists(tiny_model_dir, minibeir_dir, tmp_path):
    import dataclasses

    spec = RunSpec(
        model=str(tiny_model_dir),
        dataset=str(minibeir_dir),
        device="cpu",
        metrics=METRICS,
        cache_dir=str(tmp_path / "cache"),
    )
    prepared = prepare(spec)
    prepared = dataclasses.replace(prepared, contract=prepared.contract.replace(index="binary"))
    axes = parse_vary(["dim=16"])
    result = run_sweep(prepared, plan_cells(prepared.contract, axes, info=prepared.model), METRICS, axes=axes)
    cell = result.cell("dim=16")
    assert cell.result.contract.index == "binary" and cell.index is not None
    assert cell.index.report.requested == "binary" and cell.index.report.dim == 16
    assert 0.0 < cell.index.report.recall[10] < 1.0
    assert result.base.manifest["index"]["type"] == "binary"
    assert result.stats.contracts_scored == 4  # base and cell, each with its flat reference
