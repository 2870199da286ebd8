"""The sparse vector cache: a rerun reads a role's vectors back bit for bit instead of running the model; any
change of what makes them (texts, pruning, max length, model) misses; a damaged file is named, deleted and
recomputed; `evalsuite run --retrieval sparse` reuses it and `--no-cache` bypasses it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalsuite.cli import main
from evalsuite.encode.cache import CacheCorruptionWarning
from evalsuite.encode.sparse import SparseEncoder
from evalsuite.encode.sparse_cache import SparseVectorCache
from evalsuite.model import resolve_model
from evalsuite.testing.tiny_sparse import write_tiny_bgem3

TEXTS = ["how does a database commit a transaction", "", "yeast makes the bread dough rise " * 5, "moon orbit"]


@pytest.fixture(scope="module")
def bgem3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bgem3(tmp_path_factory.mktemp("bgem3") / "m")


def _encoder(model_dir: Path, max_length: int = 64) -> SparseEncoder:
    info = resolve_model(str(model_dir))
    return SparseEncoder.of(info, max_length=max_length, device="cpu", batch_size=2, trust_remote_code=False)


def _same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for (ia, wa), (ib, wb) in zip(a, b, strict=True):
        assert ia.dtype == ib.dtype == np.int64 and wa.dtype == wb.dtype == np.float32
        np.testing.assert_array_equal(ia, ib)
        np.testing.assert_array_equal(wa, wb)


def test_a_stored_list_reads_back_bit_for_bit_without_the_model(bgem3_dir: Path, tmp_path: Path) -> None:
    enc = _encoder(bgem3_dir)
    want = enc.encode(TEXTS, 0)
    assert any(len(i) == 0 for i, _ in want) and any(len(i) > 3 for i, _ in want)  # the empty text holds nothing
    cache = SparseVectorCache(tmp_path)
    key = enc.cache_key(TEXTS, 0)
    _same(cache.get(key, lambda: want), want)
    got = SparseVectorCache(tmp_path).get(key, lambda: pytest.fail("the model ran again"))
    _same(got, want)
    assert (cache.hits, cache.misses) == (0, 1)


def test_whatever_makes_the_vectors_is_in_the_key(bgem3_dir: Path, tmp_path: Path) -> None:
    enc = _encoder(bgem3_dir)
    base = enc.cache_key(TEXTS, 0)
    others = [
        enc.cache_key(TEXTS[::-1], 0),  # the same texts in another order: other rows
        enc.cache_key([*TEXTS[:-1], TEXTS[-1] + " "], 0),
        enc.cache_key(TEXTS, 3),  # pruned
        _encoder(bgem3_dir, max_length=16).cache_key(TEXTS, 0),
        _encoder(write_tiny_bgem3(tmp_path / "other", seed=1)).cache_key(TEXTS, 0),  # another model
    ]
    assert len({k.digest() for k in [base, *others]}) == 6
    assert enc.cache_key(list(TEXTS), 0) == base
    pruned = enc.encode(TEXTS, 3)
    assert max(len(i) for i, _ in pruned) == 3
    cache = SparseVectorCache(tmp_path / "c")
    cache.store(base, enc.encode(TEXTS, 0))
    assert cache.load(enc.cache_key(TEXTS, 3)) is None


@pytest.mark.parametrize("damage", ["flip", "truncate", "other-key"])
def test_a_damaged_file_is_named_deleted_and_recomputed(bgem3_dir: Path, tmp_path: Path, damage: str) -> None:
    enc = _encoder(bgem3_dir)
    want = enc.encode(TEXTS, 0)
    cache = SparseVectorCache(tmp_path)
    key = enc.cache_key(TEXTS, 0)
    path = cache.store(key, want)
    if damage == "other-key":  # a file of another key where this key's belongs
        path.write_bytes(cache.store(enc.cache_key(TEXTS, 3), enc.encode(TEXTS, 3)).read_bytes())
    else:
        data = bytearray(path.read_bytes())
        if damage == "flip":
            with np.load(path) as npz:  # a weight's bytes changed inside the archive (stored uncompressed)
                first = npz["weights"][:1].tobytes()
            at = bytes(data).index(first)
            data[at] ^= 0x01
        else:
            data = data[: len(data) // 2]
        path.write_bytes(bytes(data))
    with pytest.warns(CacheCorruptionWarning, match=str(path.name)):
        got = cache.get(key, lambda: want)
    _same(got, want)
    assert cache.corrupt == 1 and cache.misses == 1
    _same(SparseVectorCache(tmp_path).get(key, lambda: pytest.fail("not stored again")), want)


def test_a_sparse_run_reads_its_vectors_back_and_no_cache_bypasses_it(bgem3_dir: Path, small_beir: Path, tmp_path):
    argv = ["run", "--model", str(bgem3_dir), "--dataset", str(small_beir), "--device", "cpu", "--retrieval", "sparse"]
    runs = {}
    for name, extra in (("first", []), ("again", []), ("nocache", ["--no-cache"])):
        assert main([*argv, "--cache-dir", str(tmp_path / "cache"), *extra, "--out", str(tmp_path / name)]) == 0
        runs[name] = json.loads((tmp_path / name / "results.json").read_text())
    cached = [r["manifest"]["retrieval"]["sparse"].get("vector_cache") for r in runs.values()]
    assert cached == [{"hits": 0, "misses": 2, "corrupt": 0}, {"hits": 2, "misses": 0, "corrupt": 0}, None]
    for name in ("again", "nocache"):
        assert runs[name]["metrics"] == runs["first"]["metrics"]
        assert runs[name]["per_query"] == runs["first"]["per_query"]
    trec = {n: (tmp_path / n / "run.trec").read_text() for n in runs}
    assert trec["again"] == trec["first"] == trec["nocache"]
