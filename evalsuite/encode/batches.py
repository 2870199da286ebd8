"""Batches formed by token length (little padding), the one batcher every local model uses: the reference
encoder (`local.py`), the reranker (`rerank/local.py`) and late interaction (`tokens.py`)."""

from __future__ import annotations

import numpy as np


def length_batches(lengths: np.ndarray, batch_size: int, max_batch_tokens: int) -> list[np.ndarray]:
    """Indices grouped longest first, each group under ``batch_size`` rows and ``max_batch_tokens`` padded tokens."""
    order = np.argsort(-lengths, kind="stable")
    batches: list[np.ndarray] = []
    cur: list[int] = []
    cur_max = 0
    for i in order:
        n = int(lengths[i])
        new_max = max(cur_max, n)
        if cur and (len(cur) >= batch_size or new_max * (len(cur) + 1) > max_batch_tokens):
            batches.append(np.array(cur))
            cur, new_max = [], n
        cur.append(int(i))
        cur_max = new_max
    if cur:
        batches.append(np.array(cur))
    return batches
