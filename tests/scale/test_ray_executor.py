"""The Ray Data executor on a local Ray (2 CPUs): same metrics as in-process, typed failures, resume."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from evalsuite.base.errors import ExecutorError, StoreError
from evalsuite.encode.executors import Execution
from evalsuite.run.pipeline import make_encoder, prepare, run
from evalsuite.run.spec import RunSpec

ray = pytest.importorskip("ray")
# one local Ray per test session, on one xdist worker (run with --dist loadgroup to honour the group)
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.slow]


@pytest.fixture(scope="session")
def local_ray():
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_ray_run_equals_the_in_process_run(local_ray, tiny_model_dir: Path, minibeir_dir: Path, tmp_path: Path) -> None:
    spec = RunSpec(model=str(tiny_model_dir), dataset=str(minibeir_dir), device="cpu", use_cache=False)
    prepared = prepare(spec)
    local = run(spec, prepared)
    encoder = make_encoder(prepared, execution=Execution(executor="ray", ray_actors=2))
    encoder.rows_per_batch = 64  # several Ray batches, finished out of order by two actors
    remote = run(spec, prepared, encoder)
    assert remote.metrics == local.metrics and remote.per_query == local.per_query
    # batches differ from the in-process run's (other padding), so vectors agree to float rounding, not bits
    assert cosine_rows(remote.doc_vectors, local.doc_vectors).min() >= 0.9999
    assert cosine_rows(remote.query_vectors, local.query_vectors).min() >= 0.9999
    n = len(prepared.dataset.doc_ids)
    assert (
        remote.timing["documents"]["texts"] == n
        and remote.timing["documents"]["tokens"] == local.timing["documents"]["tokens"]
    )
    assert remote.manifest["device"].startswith("ray:cpu")
    # block-wise from the store, fed by Ray
    blocked = run(
        spec,
        prepared,
        encoder,
        execution=Execution(executor="ray", chunk_size=100, block_rows=50, store_dir=tmp_path / "store"),
    )
    assert blocked.metrics == local.metrics


def dying_counter(model_root) -> str:
    return os.path.join(str(model_root), ".dying-actor-calls")


class _DyingActor:
    """The real actor, but the third document batch of the run (counted in a file shared by every actor)
    makes its process exit, as if the node were killed."""

    def __init__(self, settings) -> None:
        from evalsuite.encode.ray_executor import _EncodeActor

        self.inner = _EncodeActor(settings)
        self.counter = dying_counter(settings.info.root)

    def __call__(self, batch):
        if self.inner.settings.role == "document":
            with open(self.counter, "a") as fh:
                fh.write("x")
            if os.path.getsize(self.counter) == 3:
                os._exit(1)
        return self.inner(batch)


def test_a_dying_actor_is_a_clear_error_and_a_rerun_resumes(
    local_ray, tiny_model_dir: Path, minibeir_dir: Path, tmp_path: Path
) -> None:
    spec = RunSpec(
        model=str(tiny_model_dir), dataset=str(minibeir_dir), device="cpu", cache_dir=str(tmp_path / "cache")
    )
    prepared = prepare(spec)
    dying = make_encoder(prepared, execution=Execution(executor="ray"))
    dying.flush_rows = 1
    dying.inner.rows_per_batch = 40
    dying.inner.wave_rows = 80
    if os.path.exists(dying_counter(prepared.model.root)):
        os.unlink(dying_counter(prepared.model.root))
    dying.inner.actor_cls = _DyingActor
    with pytest.raises(ExecutorError, match=r"failed after \d+ of \d+ .*re-run resumes") as info:
        run(spec, prepared, dying)
    finished = dying.cache.stats.rows_written
    n_queries = len(prepared.dataset.query_ids)
    assert finished >= n_queries + 2 * 40, info.value  # the queries and two document batches were saved
    resumed = make_encoder(prepared, execution=Execution(executor="ray"))
    result = run(spec, prepared, resumed)
    assert result.timing["cache"]["hits"] == finished
    assert (
        result.timing["cache"]["misses"] == len(prepared.dataset.doc_ids) + len(prepared.dataset.query_ids) - finished
    )
    reference = run(spec.replace(use_cache=False), prepared)
    assert result.metrics == reference.metrics


def test_an_unreachable_ray_address_fails_fast() -> None:
    from evalsuite.encode.ray_executor import check_reachable

    t0 = time.perf_counter()
    with pytest.raises(ExecutorError, match="does not answer"):
        check_reachable("ray://127.0.0.1:9", timeout=2.0)
    with pytest.raises(ExecutorError, match="HOST:PORT"):
        check_reachable("nonsense")
    assert time.perf_counter() - t0 < 10


def test_an_unreachable_ray_address_ends_a_run_with_a_typed_error(
    tiny_model_dir: Path, small_beir: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from evalsuite.encode.executors import Execution\n"
        "from evalsuite.base.errors import ExecutorError\n"
        "from evalsuite.run.pipeline import run\n"
        "from evalsuite.run.spec import RunSpec\n"
        "try:\n"
        f"    run(RunSpec(model={str(tiny_model_dir)!r}, dataset={str(small_beir)!r}, device='cpu', use_cache=False),\n"
        "        execution=Execution(executor='ray', ray_address='ray://127.0.0.1:9'))\n"
        "except ExecutorError as exc:\n"
        "    print('EXECUTOR-ERROR', exc)\n"
        "    sys.exit(3)\n"
    )
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])),
    )
    assert out.returncode == 3, out.stderr[-2000:]
    assert "ray://127.0.0.1:9 does not answer" in out.stdout and "--ray-address" in out.stdout
    assert time.perf_counter() - t0 < 60


def test_a_store_on_a_read_only_path_is_a_clear_error(tiny_model_dir: Path, minibeir_dir: Path, tmp_path: Path) -> None:
    spec = RunSpec(model=str(tiny_model_dir), dataset=str(minibeir_dir), device="cpu", use_cache=False)
    prepared = prepare(spec)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(StoreError, match="cannot create the vector store"):
        run(spec, prepared, execution=Execution(chunk_size=50, store_dir=blocker / "store"))
