"""The compact id index as a sequence, and the code-point ranks computed from its UTF-8 blob."""

from __future__ import annotations

import random

import numpy as np
import pytest

from evalsuite.datasets.idindex import IdBuilder, IdIndex, code_point_ranks

# prefixes of each other, non-ASCII (2-, 3- and 4-byte UTF-8), a NUL past a prefix, ids longer than one
# 8-byte word that share the first word, code points on both sides of the surrogates, upper before lower
ADVERSARIAL = [
    "d1",
    "d10",
    "d1é",
    "d1\U0001f600",
    "d2",
    "D1",
    "é",
    "e",
    "",
    "d1\x00",
    "abcdefgh",
    "abcdefghi",
    "abcdefgh\x00",
    "abcdefgha",
    "abcdefgh" * 3,
    "abcdefgh" * 2 + "é",
    "\uffff",
    "\U00010000",
    "\ue000",
    "{",
    "z",
    "\x7f",
    "\x80",
    "d\ud800",  # a lone surrogate: JSON's "\ud800" escape reads as one (bug caught: a strict UTF-8 encode)
    "\udfff",
]


def index_of(ids: list[str]) -> IdIndex:
    builder = IdBuilder()
    for i in ids:
        builder.add(i)
    return builder.build()


def python_ranks(ids: list[str]) -> list[int]:
    rank = [0] * len(ids)
    for place, j in enumerate(sorted(range(len(ids)), key=lambda j: ids[j])):  # str order: code points
        rank[j] = place
    return rank


@pytest.mark.parametrize("as_index", [False, True])
def test_ranks_are_the_code_point_order(as_index: bool) -> None:
    ids = list(ADVERSARIAL)
    random.Random(5).shuffle(ids)
    got = code_point_ranks(index_of(ids) if as_index else ids)
    assert got.dtype == np.int32 and got.tolist() == python_ranks(ids)
    # spelled out: a prefix first, then by the next code point, never by length
    small = ["d10", "d2", "d1", "d1é", "d1\x00"]
    assert code_point_ranks(index_of(small) if as_index else small).tolist() == [2, 4, 0, 3, 1]


def test_ranks_match_python_on_random_ids() -> None:
    alphabet = ["a", "b", "d", "0", "1", "é", "\x00", "\x7f", "\x80", "{", "\U0001f600", "\uffff", "\ue000", "D"]
    rng = random.Random(0)
    for _ in range(200):
        ids: set[str] = set()
        n = rng.randint(0, 50)
        while len(ids) < n:
            ids.add("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20))))
        order = list(ids)
        rng.shuffle(order)
        expected = python_ranks(order)
        assert code_point_ranks(order).tolist() == expected
        assert code_point_ranks(index_of(order)).tolist() == expected


def test_the_index_is_a_sequence_of_its_ids() -> None:
    ids = ["d1", "d10", "dé", "", "x" * 20]
    index = index_of(ids)
    assert len(index) == 5 and list(index) == ids
    assert [index[i] for i in range(5)] == ids and [index[-i] for i in range(1, 6)] == ids[::-1]
    assert index[1:3] == ids[1:3] and index[::2] == ids[::2] and index[3:] == ids[3:] and index[4:1] == []
    assert "dé" in index and "d" not in index and 1 not in index
    assert index.index("x" * 20) == 4 and index.index("d1") == 0
    with pytest.raises(ValueError):
        index.index("d")
    with pytest.raises(IndexError):
        index[5]
    with pytest.raises(IndexError):
        index[-6]
    assert code_point_ranks(index_of([])).tolist() == []
