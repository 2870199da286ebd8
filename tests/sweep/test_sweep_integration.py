"""The real bundled all-MiniLM-L6-v2 on the fixture dataset: sweep cells equal single runs,
a 12-cell grid is one forward pass per role, a warm re-run encodes nothing, corruption heals."""

import pytest

from evalsuite.encode.cache import CacheCorruptionWarning
from evalsuite.run.pipeline import prepare, run
from evalsuite.run.spec import RunSpec
from evalsuite.sweep import parse_vary, plan_cells, run_sweep

pytestmark = [pytest.mark.integration, pytest.mark.slow]
METRICS = ("ndcg@10", "recall@100", "mrr@10")


@pytest.fixture(scope="module")
def spec(minibeir_dir, tmp_path_factory):
    return RunSpec(
        dataset=str(minibeir_dir), device="cpu", metrics=METRICS, cache_dir=str(tmp_path_factory.mktemp("cache"))
    )


def test_cells_match_each_config_encoded_on_its_own(spec):
    prepared = prepare(spec)
    axes = parse_vary(["pooling=cls,mean,last", "dim=256,128,64"])
    sweep = run_sweep(prepared, plan_cells(prepared.contract, axes, info=prepared.model), axes=axes)
    assert sweep.stats.passes_by_role == {"query": 1, "document": 1}
    for cell in sweep.cells:
        if cell.cell.same_as_base:
            continue
        c = cell.result.contract
        alone = run(spec.replace(pooling=c.pooling, dim=c.dim, use_cache=False))
        assert alone.contract == c
        for m in METRICS:
            assert abs(cell.result.metrics[m] - alone.metrics[m]) <= 0.002, (cell.cell.name, m)


def test_grid_warm_rerun_and_corruption(spec, tmp_path):
    spec = spec.replace(cache_dir=str(tmp_path / "cache"))
    prepared = prepare(spec)
    axes = parse_vary(["pooling=cls,mean,last", "dim=384,256,128,64"])
    cells = plan_cells(prepared.contract, axes, grid=True, info=prepared.model)
    cold = run_sweep(prepared, cells, axes=axes, grid=True)
    assert len(cold.cells) == 12
    assert cold.stats.passes_by_role == {"query": 1, "document": 1}
    assert cold.stats.models_loaded == 1

    warm = run_sweep(prepare(spec), cells, axes=axes, grid=True)
    assert warm.stats.texts_encoded_by_role == {"query": 0, "document": 0}
    assert warm.stats.models_loaded == 0 and warm.stats.cache["misses"] == 0
    for a, b in zip(cold.cells, warm.cells, strict=True):
        assert a.result.metrics == pytest.approx(b.result.metrics, abs=1e-9)

    segments = sorted((tmp_path / "cache").rglob("*.seg"))
    assert len(segments) == 6  # (query, document) x (cls, mean, last)
    victim = segments[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 3] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.warns(CacheCorruptionWarning, match="unusable"):
        healed = run_sweep(prepare(spec), cells, axes=axes, grid=True)
    assert healed.stats.cache["corrupt"] == 1
    assert sum(healed.stats.texts_encoded_by_role.values()) > 0 and healed.stats.models_loaded == 1
    assert any("unusable" in w for w in healed.warnings)
    for a, b in zip(cold.cells, healed.cells, strict=True):
        assert a.result.metrics == pytest.approx(b.result.metrics, abs=1e-4)


def test_index_by_dimension_on_the_bundled_model(spec, tmp_path):
    """The issue's command: every index at every Matryoshka dimension, one forward pass per role."""
    from evalsuite.sweep.reports import write_sweep_reports

    prepared = prepare(spec)
    axes = parse_vary(["index=flat,hnsw,ivfpq,sq8,binary,binary+rescore=100", "dim=384,256,128"])
    sweep = run_sweep(prepared, plan_cells(prepared.contract, axes, info=prepared.model), axes=axes)
    assert sweep.stats.passes_by_role == {"query": 1, "document": 1} and len(sweep.cells) == 18
    for dim in (384, 256, 128):
        recall = {
            k: sweep.cell(f"index={k},dim={dim}").index.report.recall[10]
            for k in ("flat", "hnsw", "ivfpq", "sq8", "binary", "binary+rescore=100")
        }
        assert recall["flat"] == 1.0 and recall["hnsw"] >= 0.95 and recall["sq8"] >= 0.95
        assert recall["binary"] < recall["binary+rescore=100"] and recall["ivfpq"] < 1.0
        sq8 = sweep.cell(f"index=sq8,dim={dim}").index.vs_flat["ndcg@10"].ci
        assert abs(sq8.delta) <= 0.005 and sq8.low <= sq8.delta <= sq8.high  # 8 bits per dimension barely move it
    html = write_sweep_reports(sweep, tmp_path)["report.html"].read_text()
    assert html.count("<figcaption>Pareto plot") == 2 and "Matryoshka x quantization" in html
