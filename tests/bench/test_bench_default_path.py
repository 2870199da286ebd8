"""bench_scale.py --default-path end to end at small sizes: it runs `evalsuite run` with default flags and with
--chunk-size 0 on each corpus and reports the fields. No timing or memory is asserted (shared machines are
noisy); what is asserted is deterministic: which run chose the chunked path (the corpus file's size against
spec.AUTO_CHUNK_BYTES) and that both runs of a corpus give the same metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.run.spec import AUTO_CHUNK_BYTES

REPO = Path(__file__).resolve().parents[2]
FIELDS = {
    "documents",
    "doc_words",
    "pad_kib",
    "corpus_mib",
    "run",
    "flags",
    "chunked",
    "peak_rss_mb",
    "wall_seconds",
    "vectors_mb",
    "metrics",
}


@pytest.mark.slow
def test_default_path_benchmark_runs_and_the_large_corpus_is_chunked(tmp_path):
    """Bugs: the default run given --chunk-size 0 (never chunked), the decision read from the wrong run's stderr,
    a row missing a field, the two runs of a corpus swapped."""
    out = tmp_path / "dp.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "bench_scale.py"),
            "--default-path",
            "--sizes",
            "200",
            "--pad-kib",
            "700",  # 200 records: 137 MiB, over the threshold (the decision below it: tests/scale)
            "--queries",
            "15",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert [(r["documents"], r["run"]) for r in rows] == [(200, "default"), (200, "in-memory")]
    for r in rows:
        assert set(r) == FIELDS
        assert r["peak_rss_mb"] > 0 and r["wall_seconds"] > 0 and set(r["metrics"]) >= {"ndcg@10", "recall@100"}
    assert rows[0]["corpus_mib"] * 2**20 >= AUTO_CHUNK_BYTES
    assert [r["chunked"] for r in rows] == [True, False]
    assert [r["flags"] for r in rows] == ["(none)", "--chunk-size 0"]
    assert rows[0]["metrics"] == rows[1]["metrics"]
    assert rows[0]["vectors_mb"] == round(200 * 32 * 4 / 2**20, 1)
    printed = proc.stdout
    assert "| documents | corpus |" in printed and "| 200 | " in printed and "| yes | " in printed
