"""The Ray executor's checks that need no cluster: an address that does not answer fails fast, a store on a read-only
path is a clear error (the runs on a real two-node cluster are in test_ray_cluster.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from evalsuite.base.errors import ExecutorError, StoreError
from evalsuite.encode.executors import Execution
from evalsuite.run.pipeline import prepare, run
from evalsuite.run.spec import RunSpec


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
