"""BGE-M3's lexical weights equal FlagEmbedding's own: ``BGEM3FlagModel(...).encode(return_sparse=True)``'s
``lexical_weights``, per text (the same active token ids, weights within 1e-5), on the tiny BGE-M3-shaped model.
FlagEmbedding 1.4.2 needs transformers < 4.57, so it runs in its own venv (``.ci/flagembedding.sh install``, part
of ``scripts/bootstrap.sh --test``) as a subprocess that prints the weights as JSON."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from evalsuite.encode.sparse import SparseEncoder
from evalsuite.model import resolve_model
from evalsuite.testing.tiny_sparse import write_tiny_bgem3

VENV = Path(__file__).resolve().parents[2] / ".flagembedding-venv"
TEXTS = [
    "how does a database commit a transaction",
    "yeast makes the bread dough rise in the oven",
    "the team player scores a goal on the court, the team wins",
    "",
    "planet moon sun orbit light space " * 6,
    "query: what orbits the sun",
]
ORACLE = """
import json, sys
from FlagEmbedding import BGEM3FlagModel
model = BGEM3FlagModel(sys.argv[1], use_fp16=False, devices="cpu", batch_size=2)
texts = json.loads(sys.stdin.read())
out = model.encode(texts, max_length=int(sys.argv[2]), return_dense=False, return_sparse=True, return_colbert_vecs=False)
print(json.dumps([{str(k): float(v) for k, v in w.items()} for w in out["lexical_weights"]]))
"""


def _flagembedding(model_dir: Path, texts: list[str], max_length: int) -> list[dict[int, float]]:
    python = VENV / "bin" / "python"
    if not python.exists():
        reason = f"the FlagEmbedding venv is not at {VENV}; install it with `bash .ci/flagembedding.sh install`"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI must run the FlagEmbedding parity test)")
        pytest.skip(reason)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    done = subprocess.run(
        [str(python), "-c", ORACLE, str(model_dir), str(max_length)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [{int(k): v for k, v in w.items()} for w in json.loads(done.stdout.strip().splitlines()[-1])]


def test_bgem3_lexical_weights_equal_flagembedding(tmp_path: Path) -> None:
    model_dir = write_tiny_bgem3(tmp_path / "bgem3")
    theirs = _flagembedding(model_dir, TEXTS, 64)
    encoder = SparseEncoder.of(
        resolve_model(str(model_dir)), max_length=64, device="cpu", batch_size=2, trust_remote_code=False
    )
    ours = encoder.encode(TEXTS, 0)
    for text, (ids, weights), want in zip(TEXTS, ours, theirs, strict=True):
        assert ids.tolist() == sorted(want), text
        np.testing.assert_allclose(weights, [want[i] for i in sorted(want)], rtol=1e-5, atol=1e-6, err_msg=text)
    assert sum(len(w) for w in theirs) > 20  # the comparison has content
