"""Sweeps on the tiny random BERT: one forward pass per role, equality with single runs, warm cache."""

import json

import pytest

from evalsuite.run.pipeline import prepare, run
from evalsuite.run.spec import RunSpec
from evalsuite.sweep import parse_vary, plan_cells, run_sweep
from evalsuite.sweep.reports import write_sweep_reports

METRICS = ("ndcg@10", "recall@100")


@pytest.fixture(scope="module")
def spec(tiny_model_dir, minibeir_dir, tmp_path_factory):
    return RunSpec(
        model=str(tiny_model_dir),
        dataset=str(minibeir_dir),
        device="cpu",
        metrics=METRICS,
        cache_dir=str(tmp_path_factory.mktemp("cache")),
    )


@pytest.fixture(scope="module")
def grid(spec):
    prepared = prepare(spec)
    axes = parse_vary(["pooling=cls,mean,last", "dim=32,16,8"])
    cells = plan_cells(prepared.contract, axes, grid=True, info=prepared.model)
    return prepared, axes, cells, run_sweep(prepared, cells, METRICS, axes=axes, grid=True)


def test_grid_is_one_forward_pass_per_role(grid):
    prepared, _, _, result = grid
    st = result.stats
    assert len(result.cells) == 9
    assert st.passes_by_role == {"query": 1, "document": 1}
    assert st.texts_encoded_by_role == {
        "query": len(prepared.dataset.queries),
        "document": len(prepared.dataset.corpus),
    }
    assert st.models_loaded == 1
    assert st.contracts_scored == 9  # pooling=mean,dim=32 is the base: scored once
    assert set(st.passes[0].poolings) == {"cls", "mean", "last"}


def test_each_cell_matches_a_run_of_that_config_alone(grid, spec):
    _, _, _, result = grid
    for name in ("pooling=cls,dim=16", "pooling=last,dim=8", "pooling=mean,dim=32"):
        cell = result.cell(name)
        alone = run(spec.replace(pooling=cell.result.contract.pooling, dim=cell.result.contract.dim, use_cache=False))
        assert alone.contract == cell.result.contract
        for m in METRICS:
            assert cell.result.metrics[m] == pytest.approx(alone.metrics[m], abs=1e-6), (name, m)


def test_delta_and_p_values_against_the_base(grid):
    _, _, _, result = grid
    for c in result.cells:
        for m in METRICS:
            assert c.delta[m] == pytest.approx(c.result.metrics[m] - result.base.metrics[m])
            assert 0.0 <= c.p_values[m] <= 1.0
    same = result.cell("pooling=mean,dim=32")
    assert same.cell.same_as_base and same.result is result.base
    assert same.p_values == {m: 1.0 for m in METRICS} and same.delta == {m: 0.0 for m in METRICS}


def test_warm_rerun_encodes_nothing_and_loads_no_model(grid, spec):
    _, axes, cells, cold = grid
    prepared = prepare(spec)
    warm = run_sweep(prepared, cells, METRICS, axes=axes, grid=True)
    assert warm.stats.texts_encoded_by_role == {"query": 0, "document": 0}
    assert warm.stats.models_loaded == 0
    assert warm.stats.cache["misses"] == 0 and warm.stats.cache["hits"] > 0
    for a, b in zip(cold.cells, warm.cells, strict=True):
        assert a.result.metrics == pytest.approx(b.result.metrics, abs=1e-9)


def test_prefix_max_length_and_normalize_cells(tiny_spec):
    spec = tiny_spec(metrics=("ndcg@10",))
    prepared = prepare(spec)
    axes = parse_vary(['query_prefix=[null, "what is "]', "max_length=16", "normalize=false", "pooling=cls"])
    cells = plan_cells(prepared.contract, axes, info=prepared.model)
    result = run_sweep(prepared, cells, axes=axes)
    st = result.stats
    # query passes: base (= prefix none), "what is ", max 16; document passes: base, max 16
    assert st.passes_by_role == {"query": 3, "document": 2}
    assert st.models_loaded == 2  # max length 64 and 16 each need an encoder, loaded one after the other
    assert result.cell("query_prefix=none").cell.same_as_base
    short = result.cell("max_length=16")
    alone = run(spec.replace(max_length=16, use_cache=False))
    assert short.result.metrics["ndcg@10"] == pytest.approx(alone.metrics["ndcg@10"], abs=1e-6)
    raw = result.cell("normalize=false").result.contract
    assert (raw.normalize, raw.similarity) == (False, "dot")
    prefixed = result.cell('query_prefix="what is "').result.contract
    assert prefixed.query_prefix == "what is " and prefixed.doc_prefix == ""


def test_without_cache_encodes_directly(tiny_spec):
    spec = tiny_spec(use_cache=False, metrics=("ndcg@10",))
    prepared = prepare(spec)
    cells = plan_cells(prepared.contract, parse_vary(["pooling=cls,last"]))
    result = run_sweep(prepared, cells)
    assert result.stats.cache is None and result.stats.models_loaded == 1
    assert result.stats.passes_by_role == {"query": 1, "document": 1}


def test_sweep_json_and_markdown(grid, tmp_path):
    _, _, _, result = grid
    paths = write_sweep_reports(result, tmp_path / "out")
    data = json.loads(paths["sweep.json"].read_text())
    assert data["kind"] == "sweep" and data["mode"] == "grid"
    assert data["axes"] == [
        {"name": "pooling", "values": ["cls", "mean", "last"]},
        {"name": "dim", "values": ["32", "16", "8"]},
    ]
    assert data["base"]["contract"]["pooling"] == "mean" and set(data["base"]["metrics"]) == set(METRICS)
    cell = next(c for c in data["cells"] if c["name"] == "pooling=cls,dim=16")
    assert cell["contract"]["dim"] == 16 and cell["contract"]["pooling"] == "cls"
    assert set(cell["delta"]) == set(cell["p_values"]) == set(METRICS)
    assert cell["storage"] == {
        "dim": 16,
        "dtype_stored": "float32",
        "bytes_per_vector": 64,
        "index_bytes_1m_vectors": 64_000_000,
        "index_size_1m_vectors": "64.00 MB",
    }
    assert data["execution"]["passes_by_role"] == {"query": 1, "document": 1}
    md = paths["report.md"].read_text()
    assert "| pooling=cls,dim=16 |" in md and "pooling=mean,dim=32 (= base)" in md
    assert "## Storage" in md and "64.00 MB" in md
    assert paths["report.html"].read_text().startswith("<!DOCTYPE html>")
    assert not list((tmp_path / "out").glob(".*.tmp"))
