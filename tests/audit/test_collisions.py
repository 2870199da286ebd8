"""The one-pass collision finder of the audit's scan (``Scan.same_vector``) against a brute-force pairwise oracle."""

from __future__ import annotations

import numpy as np

from evalsuite.audit.scan import scan


class _Rows:
    """An IndexSource's streaming part over an in-memory array (only what ``scan`` asks of a store)."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors

    def iter_vectors(self, block_rows: int):
        for start in range(0, len(self.vectors), block_rows):
            block = self.vectors[start : start + block_rows]
            yield [f"c{start + i}" for i in range(len(block))], block


def _oracle(v: np.ndarray) -> list[list[int]]:
    """Groups of rows whose vectors are equal to 6 decimals, by comparing every pair (finite, non-zero rows)."""
    r = np.round(v.astype(np.float64), 6)
    ok = [i for i in range(len(v)) if np.isfinite(v[i]).all() and np.any(v[i] != 0)]
    groups: list[list[int]] = []
    seen: set[int] = set()
    for a in ok:
        if a in seen:
            continue
        same = [b for b in ok if b >= a and np.array_equal(r[a], r[b])]
        seen.update(same)
        if len(same) > 1:
            groups.append(same)
    return sorted(groups)


def test_same_vector_groups_match_a_brute_force_oracle_across_blocks():
    rng = np.random.default_rng(3)
    v = rng.normal(size=(300, 16)).astype(np.float32)
    v[[7, 150, 299]] = v[42]  # one group across blocks
    v[11] = v[12]  # a pair inside a block
    v[20] = v[21] + 1e-9  # equal to 6 decimals: one vector
    v[30] = v[31] + 1e-3  # not equal
    v[[50, 51]] = 0.0  # zero rows: the norms check names them, never a collision
    v[[60, 61]] = np.nan
    found = scan(_Rows(v), np.arange(0), block_rows=64).same_vector()
    assert found == _oracle(v)
    assert [7, 42, 150, 299] in found and [11, 12] in found and [20, 21] in found
    assert not any(30 in g or 50 in g or 60 in g for g in found)
