"""A run whose vectors are all cached loads no model stack: torch, transformers and tokenizers stay unimported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from evalsuite.run.pipeline import run
from evalsuite.run.spec import RunSpec

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "tokenizers", "sentence_transformers", "ray")

CHILD = """
import json, sys
from evalsuite.run.pipeline import run
from evalsuite.run.spec import RunSpec
spec = RunSpec(**json.loads(sys.argv[1]))
result = run(spec)
print(json.dumps({"loaded": sorted(m for m in HEAVY if m in sys.modules), "metrics": result.metrics,
                  "cache": result.timing["cache"], "device": result.manifest["device"],
                  "documents": result.timing["documents"]}))
""".replace("HEAVY", repr(HEAVY))


def test_a_warm_run_imports_no_model_stack(tiny_model_dir: Path, small_beir: Path, tmp_path: Path) -> None:
    # max_length 8 truncates some documents: the warm run must report them without a tokenizer
    settings = {
        "model": str(tiny_model_dir),
        "dataset": str(small_beir),
        "cache_dir": str(tmp_path / "cache"),
        "max_length": 8,
    }
    cold = run(RunSpec(**settings))  # device "auto": resolving it must not need torch on the warm run
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(settings)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    warm = json.loads(out.stdout.strip().splitlines()[-1])
    assert warm["loaded"] == []
    assert (
        warm["cache"]["misses"] == 0 and warm["cache"]["hits"] == 6 + 3
    )  # documents + queries with a relevant document
    assert warm["metrics"] == cold.metrics
    assert warm["device"] == "cache"
    cold_docs = cold.timing["documents"]
    assert cold_docs["truncated"] > 0 and cold_docs["cached_texts"] == 0
    assert (warm["documents"]["texts"], warm["documents"]["cached_texts"]) == (0, 6)
    assert warm["documents"]["cached_tokens"] == cold_docs["tokens"]
    assert warm["documents"]["cached_truncated"] == cold_docs["truncated"]
    # the same child with an empty cache does load the model stack: the check above can fail
    settings["cache_dir"] = str(tmp_path / "empty")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(settings)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert {"torch", "transformers"} <= set(json.loads(out.stdout.strip().splitlines()[-1])["loaded"])
