"""Independent computations the stores are checked against: numpy brute force, recall, query vectors."""

from __future__ import annotations

import numpy as np


def brute_force(
    stored: np.ndarray, ids: list[str], queries: np.ndarray, k: int, metric: str
) -> list[list[tuple[str, float]]]:
    """Top ``k`` (id, score) per query by numpy over every stored row: cosine similarity, inner product, or the
    negated squared L2 distance (higher is better)."""
    s64, q64 = stored.astype(np.float64), queries.astype(np.float64)
    if metric == "cosine":
        scores = (q64 / np.linalg.norm(q64, axis=1, keepdims=True)) @ (
            s64 / np.linalg.norm(s64, axis=1, keepdims=True)
        ).T
    elif metric == "ip":
        scores = q64 @ s64.T
    else:
        scores = -((q64[:, None, :] - s64[None, :, :]) ** 2).sum(-1)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return [[(ids[j], float(scores[i, j])) for j in row] for i, row in enumerate(order)]


def recall(ann: list[list[tuple[str, float]]], exact: list[list[tuple[str, float]]]) -> float:
    """Mean share of the exact top-k ids the approximate search found."""
    return float(
        np.mean([len({h for h, _ in a} & {h for h, _ in e}) / max(1, len(e)) for a, e in zip(ann, exact, strict=True)])
    )


def between_chunks(vectors: np.ndarray, n: int, seed: int = 3) -> np.ndarray:
    """``n`` unit query vectors, each between two random stored chunks (weights 0.55-0.8 and the rest, never
    halfway, so no two chunks tie), where an IVF cell rarely holds all of a query's neighbours."""
    rng = np.random.default_rng(seed)
    a, b = rng.choice(len(vectors), size=n), rng.choice(len(vectors), size=n)
    w = rng.uniform(0.55, 0.8, size=(n, 1))
    q = w * vectors[a] + (1 - w) * vectors[b]
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def assert_same_ranking(
    got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]], tol: float = 1e-4
) -> None:
    """The same scores rank by rank (within ``tol``) and the same ids in the same order, except that ids whose
    scores tie within ``tol`` may come in either order (float32 in the store, float64 in the oracle)."""
    assert len(got) == len(want)
    for qi, (g, w) in enumerate(zip(got, want, strict=True)):
        assert len(g) == len(w), f"query {qi}: {len(g)} hits, want {len(w)}"
        np.testing.assert_allclose([s for _, s in g], [s for _, s in w], atol=tol, err_msg=f"query {qi}")
        for rank, (cid, score) in enumerate(g):
            tied = {h for h, s in w if abs(s - score) <= tol}
            assert cid == w[rank][0] or cid in tied, (
                f"query {qi} rank {rank}: {[h for h, _ in g]} != {[h for h, _ in w]}"
            )
