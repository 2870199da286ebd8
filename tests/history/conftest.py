"""Simulated releases of the bundled model: copies of its directory with Gaussian weight noise of a growing scale
(one fixed noise direction, seeded, scaled by each weight matrix's own standard deviation), and synthetic history
records for the tests that need no model."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evalsuite.history.record import GateVerdict, HistoryRecord, MetricValue

CONTRACT = {
    "model": "minilm",
    "model_revision": "r",
    "tokenizer_revision": "t",
    "pooling": "mean",
    "normalize": True,
    "query_prefix": "",
    "doc_prefix": "",
    "dtype": "float32",
    "max_length": 256,
    "truncation": "truncate",
    "dim": 384,
    "similarity": "cosine",
    "index": "flat",
    "matryoshka_dims": None,
}


def noisy_release(src: Path, dst: Path, scale: float, seed: int = 0) -> Path:
    """``dst`` (named like the release's model directory): ``src`` with ``scale`` x std x N(0, 1) added to every
    2-D float weight; scale 0 is an exact copy."""
    from safetensors.numpy import load_file, save_file

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("model.safetensors"))
    if scale == 0:  # byte for byte: the bundled model's revision, whose embeddings other tests may have cached
        shutil.copyfile(src / "model.safetensors", dst / "model.safetensors")
        return dst
    weights = load_file(str(src / "model.safetensors"))
    rng = np.random.default_rng(seed)
    out = {}
    for name in sorted(weights):
        w = weights[name]
        if w.dtype == np.float32 and w.ndim == 2:
            noise = rng.standard_normal(w.shape).astype(np.float32)
            w = w + np.float32(scale * float(w.std())) * noise
        out[name] = w
    save_file(out, str(dst / "model.safetensors"))
    return dst


def record(
    revision: str,
    scores: Sequence[float],
    *,
    when: str,
    model: str = "minilm",
    dataset: str = "minibeir",
    sha: str = "a" * 64,
    contract: dict[str, object] | None = None,
    gates: tuple[GateVerdict, ...] = (),
    metric: str = "ndcg@10",
) -> HistoryRecord:
    """A record whose per-query ``metric`` scores are ``scores`` (query ids q000, q001, ...)."""
    qids = tuple(f"q{i:03d}" for i in range(len(scores)))
    mean = float(np.mean(scores))
    return HistoryRecord(
        model=model,
        revision=revision,
        dataset=dataset,
        dataset_sha256=sha,
        contract=contract or CONTRACT,
        contract_fingerprint="f" * 16,
        metrics={metric: MetricValue(mean, mean - 0.01, mean + 0.01)},
        query_ids=qids,
        per_query={metric: tuple(float(s) for s in scores)},
        gates=gates,
        recorded_at=when,
    )
