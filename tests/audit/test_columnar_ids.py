"""The audit's ids as one Arrow column (``audit/idcolumn.py``), its plain sidecar cut at newlines, and its norms in
cache-sized blocks: each against the straightforward Python (or numpy) computation it replaces."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from evalsuite.audit.idcolumn import IdColumn, compare_ids
from evalsuite.audit.scan import row_norms
from evalsuite.audit.stores.faiss import _read_sidecar
from evalsuite.base.errors import IndexSourceError
from evalsuite.datasets.idindex import IdBuilder


def _oracle(stored: list[str], corpus: list[str], shown: int) -> dict[str, object]:
    """The ids check as it was written over Python strings (sets, a Counter, sorted)."""
    known = frozenset(corpus)
    unknown = [i for i in dict.fromkeys(stored) if i not in known]
    counts = Counter(stored)
    dup: dict[str, list[int]] = {}
    for row, cid in enumerate(stored):
        if counts[cid] > 1:
            dup.setdefault(cid, []).append(row)
    missing = sorted(known - set(stored))
    return {
        "distinct": len(set(stored)),
        "unknown": unknown[:shown],
        "n_unknown": len(unknown),
        "missing": missing[:shown],
        "n_missing": len(missing),
        "duplicated": dup,
        "all_integer": bool(unknown)
        and len(unknown) == len(set(stored))
        and all(i.lstrip("-").isdigit() for i in unknown),
    }


def _corpus_column(ids: list[str]) -> IdColumn:
    builder = IdBuilder()
    for i in ids:
        builder.add(i)
    return IdColumn.of(builder.build())  # the corpus's compact id index, read without decoding


@pytest.mark.parametrize("seed", range(6))
def test_the_id_comparison_is_the_python_one(seed: int) -> None:
    rng = np.random.default_rng(seed)
    names = [f"d{i}" for i in range(300)] + ["é", "e", "z", "Z", "dé", "d", "", "-12", "٣", "10", "9"]
    corpus = list(dict.fromkeys(rng.choice(names[:-4], size=200).tolist()))
    stored = rng.choice(names, size=int(rng.integers(1, 400))).tolist()
    if seed == 0:  # a batch appended twice
        stored = corpus[:50] + corpus[10:20] + corpus[50:]
    if seed == 1:  # FAISS ids without a sidecar: every stored id unknown and an integer
        stored = ["3", "-12", "٣", "10", "10"]
    got = compare_ids(IdColumn.of(stored), _corpus_column(corpus), 7)
    assert got.__dict__ == _oracle(stored, corpus, 7)
    assert got.all_integer == (seed == 1)


def test_the_column_reads_like_the_list_it_replaces() -> None:
    ids = ["a", "é", "", "long-id-" * 10, "z"]
    col = IdColumn.of(ids)
    assert len(col) == 5 and list(col) == ids and col[1] == "é" and col[-1] == "z" and col[1:4] == ids[1:4]
    assert col[::2] == ids[::2] and col.take(np.array([4, 0, 4])) == ["z", "a", "z"]
    assert list(col.rows_of(["z", "a", "nope"])) == [0, 4] and list(col.slice(1, 3)) == ids[1:3]
    assert list(IdColumn.concat([col.slice(0, 2), IdColumn.of(["x"])])) == ["a", "é", "x"]
    with pytest.raises(IndexError):
        col[5]


SIDECARS = {
    "plain": b"c1\nc2\nc3\n",
    "no final newline": b"c1\nc2\nc3",
    "punctuation": b"doc#1/a\n{x}\n~!\n",
    "CRLF": b"c1\r\nc2\r\n",
    "spaces around": b" c1 \n\tc2\n",
    "non-ASCII": "dé\nж\n".encode(),
    "BOM": "\ufeffc1\nc2\n".encode(),
    "form feed": b"c1\x0cc2\n",
}


@pytest.mark.parametrize("name", list(SIDECARS))
def test_a_plain_sidecar_gives_the_ids_of_its_stripped_lines(name: str, tmp_path: Path) -> None:
    path = tmp_path / "ids.txt"
    path.write_bytes(SIDECARS[name])
    got = _read_sidecar(path)
    assert isinstance(got, IdColumn)
    assert list(got) == [line.strip() for line in SIDECARS[name].decode("utf-8").splitlines()]


@pytest.mark.parametrize(("data", "line"), [(b"c1\n\nc3\n", 2), (b"\nc1\n", 1), (b"c1\nc2\n\n", 3), (b"c1\n \n", 2)])
def test_an_empty_line_is_refused_with_its_number(data: bytes, line: int, tmp_path: Path) -> None:
    path = tmp_path / "ids.txt"
    path.write_bytes(data)
    with pytest.raises(IndexSourceError, match=rf"ids\.txt:{line}: an empty line"):
        _read_sidecar(path)


def test_row_norms_are_numpys_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    v = (rng.standard_normal((5000, 37)) * rng.uniform(0, 50, (5000, 1))).astype(np.float32)
    v[7, 3], v[4097, 0], v[11] = np.nan, -np.inf, 0.0
    finite, norm = row_norms(v)
    expect_finite = np.isfinite(v).all(axis=1)
    expect = np.linalg.norm(np.where(np.isfinite(v), v, 0.0).astype(np.float64), axis=1)
    assert np.array_equal(finite, expect_finite)
    assert np.array_equal(norm, np.where(expect_finite, expect, np.nan), equal_nan=True)
    assert np.isnan(norm[[7, 4097]]).all() and norm[11] == 0.0


def test_the_plain_sidecar_is_cut_without_decoding_only_when_that_is_exact(tmp_path: Path) -> None:
    from evalsuite.audit.stores.faiss import _plain_lines

    path = tmp_path / "ids.txt"
    for name, data in SIDECARS.items():
        path.write_bytes(data)
        assert (_plain_lines(path) is not None) == (name in ("plain", "no final newline", "punctuation")), name
