"""The Ray executor on a real two-node cluster: ``ray start --head`` and a second ``ray start --address`` on loopback,
one CPU each (the root conftest's ``ray_cluster``), this test process as the driver; a third node joins to be
killed. The numbers are checked against the in-process run."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsuite.base.errors import ExecutorError
from evalsuite.encode.executors import Execution
from evalsuite.encode.ray_executor import RayEncoder
from evalsuite.encode.ray_pool import executor_scope
from evalsuite.encode.settings import EncoderSettings
from evalsuite.run.pipeline import behind_cache, make_encoder, prepare, run
from evalsuite.run.prepared import encoder_settings
from evalsuite.run.spec import RunSpec

# one cluster per test session, on one xdist worker (--dist loadgroup)
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.slow]


# The in-process run of the bundled model on the bundled dataset (docs/gates.md; tests/canary pin its nDCG@10 too):
# recorded rather than recomputed here, which would add a minute of CPU to the suite.
IN_PROCESS = {"ndcg@10": 0.7635, "recall@10": 0.8659, "recall@100": 0.9912, "mrr@10": 0.8260}


def test_the_bundled_run_on_two_nodes_equals_the_in_process_run(
    ray_cluster, minibeir_dir: Path, tmp_path: Path
) -> None:
    """`evalsuite run --executor ray` as a user types it: the in-process metrics, both nodes recorded with their
    rows, where the time went, and nothing from Ray on the user's terminal (no deprecation warning)."""
    spec = RunSpec(dataset=str(minibeir_dir), device="cpu")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "evalsuite", "run", "--dataset", str(minibeir_dir), "--device", "cpu"]
    cmd += ["--executor", "ray", "--ray-address", ray_cluster.address, "--ray-actors", "2", "--no-cache"]
    proc = subprocess.run(
        [*cmd, "--out", str(out)], capture_output=True, text=True, timeout=600, env=ray_cluster.env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "deprecat" not in (proc.stdout + proc.stderr).lower(), proc.stderr[-3000:]
    assert "warning" not in proc.stderr.lower(), proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert {k: round(v, 4) for k, v in results["metrics"].items()} == IN_PROCESS
    manifest = json.loads((out / "manifest.json").read_text())
    nodes = manifest["encoder"]["nodes"]
    assert {n["node_id"] for n in nodes} == {ray_cluster.node_ids["head"], ray_cluster.node_ids["second"]}
    ds = prepare(spec).dataset
    assert sum(n["rows"] for n in nodes) == len(ds.doc_ids) + len(ds.query_ids)
    assert all(n["rows"] > 0 and n["seconds"] > 0 and n["resources"]["CPU"] == 1.0 for n in nodes), nodes
    executor = results["timing"]["executor"]
    assert executor["executor"] == "ray" and executor["actors"] == 2
    assert executor["load_seconds"] > 0 and executor["encode_seconds"] > 0 and executor["wait_seconds"] >= 0
    assert "## Ray nodes" in (out / "report.md").read_text()
    assert "ray      2 node(s): " in proc.stdout


def test_one_pool_serves_every_encoder_of_a_scope_and_a_blockwise_run(
    ray_cluster, tiny_model_dir: Path, minibeir_dir: Path, tmp_path: Path
) -> None:
    """Two encoders of one scope (two forward-pass keys: another max length) share one pool: the second
    waits for no actor and loads no model (the model of each actor is loaded once); the pool ends with the scope."""
    spec = RunSpec(model=str(tiny_model_dir), dataset=str(minibeir_dir), device="cpu", use_cache=False)
    prepared = prepare(spec)
    local = run(spec, prepared)
    ray_exec = Execution(executor="ray", ray_address=ray_cluster.address, ray_actors=2)
    with executor_scope():
        first = make_encoder(prepared, execution=ray_exec)
        a = run(spec, prepared, first)
        second = make_encoder(prepared, max_length=32, execution=ray_exec)
        texts = [prepared.dataset.corpus[d] for d in prepared.dataset.doc_ids[:100]]
        second.encode(texts, poolings=["mean"], role="document")
        assert isinstance(first, RayEncoder) and isinstance(second, RayEncoder)
        pool = first.pool()
        assert second.pool() is pool and not pool.closed
        assert a.timing["executor"]["load_seconds"] > 0
        assert second.executor_report()["timing"]["wait_seconds"] == 0
        assert second.executor_report()["timing"]["load_seconds"] == 0  # the same weights, another max length
        blocked = run(spec, prepared, execution=dataclasses.replace(
            ray_exec, chunk_size=100, block_rows=50, store_dir=tmp_path / "store"))  # fmt: skip
        assert blocked.timing["executor"]["load_seconds"] == 0  # the scope's pool, its models loaded
    assert pool.closed
    assert a.metrics == pytest.approx(local.metrics, abs=1e-6)
    assert {n["node_id"] for n in a.manifest["encoder"]["nodes"]} == set(ray_cluster.node_ids.values()) - {
        ray_cluster.node_ids.get("victim")
    }
    assert blocked.metrics == pytest.approx(local.metrics, abs=1e-6)


class _KillsAfterFirstBlock(RayEncoder):
    """The real encoder; after the first document block arrives the victim node is killed (its raylet, then its
    workers, SIGKILL by process id), with blocks of the victim's actor still in flight."""

    victim: tuple[object, str] | None = None

    def encode_stream(self, texts, *, poolings=("mean",), ids=None, role="document"):
        for i, part in enumerate(super().encode_stream(texts, poolings=poolings, ids=ids, role=role)):
            yield part
            if i == 0 and role == "document" and self.victim is not None:
                cluster, name = self.victim
                cluster.kill_node(name)  # type: ignore[attr-defined]
                self.victim = None


def test_a_node_killed_mid_run_is_a_typed_error_and_the_rerun_resumes(
    ray_cluster, tiny_model_dir: Path, minibeir_dir: Path, tmp_path: Path
) -> None:
    victim = ray_cluster.add_node("victim")
    spec = RunSpec(
        model=str(tiny_model_dir), dataset=str(minibeir_dir), device="cpu", cache_dir=str(tmp_path / "cache")
    )
    prepared = prepare(spec)
    killing = _KillsAfterFirstBlock(
        prepared.model, EncoderSettings(device="cpu"), address=ray_cluster.address, actors=3, rows_per_block=8
    )
    killing.victim = (ray_cluster, "victim")
    encoder = behind_cache(prepared, lambda: killing, encoder_settings(prepared))  # the spec's device: cpu
    encoder.flush_rows = 1  # type: ignore[attr-defined]
    t0 = time.monotonic()
    with pytest.raises(ExecutorError, match=rf"node {victim[:12]} .*re-run resumes") as info:
        run(spec, prepared, encoder)
    assert time.monotonic() - t0 < 180, "the node's death was not noticed in bounded time"
    kept = encoder.cache_stats.rows_written  # type: ignore[attr-defined]
    n_queries, n_docs = len(prepared.dataset.query_ids), len(prepared.dataset.doc_ids)
    assert n_queries + 8 <= kept < n_queries + n_docs, info.value
    assert f"({kept - n_queries} of the {n_docs} document texts" in str(info.value)
    resumed = run(spec, prepared, execution=Execution(executor="ray", ray_address=ray_cluster.address, ray_actors=2))
    assert resumed.timing["cache"]["hits"] == kept
    assert resumed.timing["cache"]["misses"] == n_queries + n_docs - kept
    reference = run(spec.replace(use_cache=False), prepared)
    assert resumed.metrics == reference.metrics
    import ray

    deadline = time.monotonic() + 120  # the next test's actors must not be placed on the dead node
    while victim in {n["NodeID"] for n in ray.nodes() if n.get("Alive")} and time.monotonic() < deadline:
        time.sleep(1)


def test_a_node_without_the_model_path_gets_it_shipped_or_is_refused_by_name(
    ray_cluster, make_tiny_bert, minibeir_dir: Path, tmp_path: Path
) -> None:
    """The model directory is moved away after the driver pinned it: no node can read the driver's path. Shipped,
    the actors verify the files by sha256 and encode; not shipped, the run is refused naming the node."""
    model = make_tiny_bert(tmp_path / "model")
    spec = RunSpec(model=str(model), dataset=str(minibeir_dir), device="cpu", use_cache=False)
    prepared = prepare(spec)
    local = run(spec, prepared)
    addr = ray_cluster.address
    shipped = make_encoder(
        prepared, execution=Execution(executor="ray", ray_address=addr, ray_actors=2, ray_ship_model=True)
    )
    plain = make_encoder(prepared, execution=Execution(executor="ray", ray_address=addr, ray_actors=2))
    shutil.move(model, tmp_path / "elsewhere")  # shipped: the files were packed when the encoder was built
    with pytest.raises(
        ExecutorError, match=r"node \w{12} \(.*\) cannot read the model at the driver's path .*--ray-ship-model"
    ):
        run(spec, prepared, plain)
    result = run(spec, prepared, shipped)
    assert result.metrics == pytest.approx(local.metrics, abs=1e-6)
    assert result.manifest["encoder"]["model_source"] == "shipped"
    assert len(result.manifest["encoder"]["nodes"]) == 2


def test_a_cluster_too_small_for_the_actors_is_said_up_front(ray_cluster, tiny_model_dir: Path) -> None:
    from evalsuite.model import resolve_model

    encoder = RayEncoder(
        resolve_model(str(tiny_model_dir)), EncoderSettings(device="cpu"), address=ray_cluster.address, actors=9
    )
    t0 = time.monotonic()
    with pytest.raises(
        ExecutorError,
        match=r"has \d CPU\(s\) in all, over \d node\(s\); --ray-actors 9 needs 9 .*lower --ray-actors to \d",
    ):
        encoder.encode(["a text"], poolings=["mean"])
    assert time.monotonic() - t0 < 30


def test_a_sweep_on_ray_starts_one_pool_for_all_its_forward_passes(
    ray_cluster, tiny_model_dir: Path, minibeir_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three forward-pass keys per role (max length 64, 32, 16) on one pool: its actors start once, each loads the
    model once; a cell equals the in-process run of its contract."""
    from evalsuite.encode.ray_pool import ActorPool
    from evalsuite.sweep import parse_vary, plan_cells, run_sweep

    spec = RunSpec(
        model=str(tiny_model_dir), dataset=str(minibeir_dir), device="cpu", use_cache=False, metrics=("ndcg@10",)
    )
    ray_spec = spec.replace(executor="ray", ray_address=ray_cluster.address, ray_actors=2)
    prepared = prepare(ray_spec)
    axes = parse_vary(["max_length=32,16"])
    cells = plan_cells(prepared.contract, axes, grid=False, info=prepared.model)
    started: list[ActorPool] = []
    start = ActorPool.start

    def counted(*args, **kwargs):  # the real start, counted
        started.append(start(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(ActorPool, "start", counted)
    result = run_sweep(prepared, cells, ("ndcg@10",), axes=axes)
    assert result.stats.passes_by_role == {"query": 3, "document": 3}
    assert len(started) == 1 and started[0].closed  # one pool for the sweep, released at its end
    cell = result.cell("max_length=16")
    alone = run(spec.replace(max_length=16))
    assert cell.result.metrics["ndcg@10"] == pytest.approx(alone.metrics["ndcg@10"], abs=1e-6)
