"""`evalsuite verify` against real vLLM servers: the index's manifest (written by a real `evalsuite run` of the
bundled model) matches the faithful server and not the CLS one, each in seconds, start-up included (issue #20).
Bug caught: verify passing a server whose vectors differ (CLS pooling), or taking the model's time to decide."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from evalsuite.cli import main

from .conftest import KEY_ENV

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("vllm")]


def test_verify_passes_the_faithful_vllm_and_fails_the_cls_one_in_seconds(vllm_servers, small_beir, tmp_path):
    assert main(["run", "--dataset", str(small_beir), "--device", "cpu", "--out", str(tmp_path / "index")]) == 0
    manifest = tmp_path / "index" / "manifest.json"
    for url, expected, key in ((vllm_servers.faithful, 0, None), (vllm_servers.cls, 1, vllm_servers.key)):
        argv = [sys.executable, "-m", "evalsuite", "verify", "--manifest", str(manifest), "--endpoint", url]
        env = dict(os.environ)
        if key is not None:
            env[KEY_ENV] = key
            argv += ["--api-key-env", KEY_ENV]
        t0 = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
        seconds = time.perf_counter() - t0
        assert proc.returncode == expected, proc.stdout + proc.stderr
        assert seconds < 20, seconds
        if key is not None:
            assert key not in proc.stdout + proc.stderr
