"""The cache at scale: segments are read one at a time, compaction merges only small segments, and the
per-row token counts survive it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evalsuite.encode.cache import EmbeddingCache, ShardKey, text_hash


def key() -> ShardKey:
    return ShardKey("rev", "tok", "float32", 64, "truncate", "mean", "document", 4)


def test_compaction_leaves_large_segments_alone_and_keeps_token_counts(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, compact_at=3, compact_rows=4)
    big = [[f"big{j}-{i}" for i in range(4)] for j in range(2)]
    for j, texts in enumerate(big):
        cache.store(
            key(),
            [text_hash(t) for t in texts],
            np.full((4, 4), 10 + j, np.float32),
            np.arange(4, dtype=np.int32) + 100 * j,
            np.array([j == 1] * 4),
        )
    big_paths = set(cache.shard_dir(key()).glob("*.seg"))
    for i in range(5):
        cache.store(
            key(),
            [text_hash(f"small{i}")],
            np.full((1, 4), i, np.float32),
            np.array([i + 1], np.int32),
            np.array([i % 2 == 0]),
        )
    texts = [f"small{i}" for i in range(5)] + big[1]
    got = cache.lookup_rows(key(), [text_hash(t) for t in texts])
    assert got.found.all() and got.vectors[:, 0].tolist() == [0, 1, 2, 3, 4, 11, 11, 11, 11]
    after = set(cache.shard_dir(key()).glob("*.seg"))
    assert big_paths <= after and len(after) == 3 and cache.stats.compactions == 1
    again = EmbeddingCache(tmp_path).lookup_rows(key(), [text_hash(t) for t in texts])
    assert again.tokens.tolist() == [1, 2, 3, 4, 5, 100, 101, 102, 103]
    assert again.truncated.tolist() == [True, False, True, False, True, True, True, True, True]


def test_a_cache_that_cannot_be_written_is_a_clear_error(tmp_path: Path) -> None:
    import pytest

    from evalsuite.base.errors import CacheError

    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = EmbeddingCache(blocker / "cache")
    with pytest.raises(CacheError, match=r"cannot write to the embedding cache .* --no-cache"):
        cache.store(key(), [text_hash("a")], np.zeros((1, 4), np.float32))
