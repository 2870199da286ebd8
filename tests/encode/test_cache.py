"""The embedding cache: keys, round trips, corruption detection, and a warm encoder that never loads."""

import warnings

import numpy as np
import pytest

from evalsuite.encode.cache import CacheCorruptionWarning, EmbeddingCache, ShardKey, default_cache_dir, text_hash
from evalsuite.encode.cached import CachedEncoder
from evalsuite.encode.local import LocalEncoder
from evalsuite.encode.settings import EncoderSettings
from evalsuite.model import resolve_model

TEXTS = [
    "how does a database commit a transaction",
    "bread",
    "yeast dough rises in the oven",
    "planet orbit around the sun",
    "bread",
]


def key(**changes):
    base = dict(
        model_revision="r",
        tokenizer_revision="t",
        dtype="float32",
        max_length=64,
        truncation="truncate",
        pooling="mean",
        role="document",
        dim=4,
    )
    return ShardKey(**{**base, **changes})


def test_round_trip_and_misses(tmp_path):
    cache = EmbeddingCache(tmp_path)
    hashes = [text_hash(t) for t in ("a", "b", "c")]
    vectors = np.arange(12, dtype=np.float32).reshape(3, 4)
    cache.store(key(), hashes[:2], vectors[:2])
    got, found = EmbeddingCache(tmp_path).lookup(key(), hashes)
    assert found.tolist() == [True, True, False]
    np.testing.assert_array_equal(got[:2], vectors[:2])
    assert cache.stats.rows_written == 2


@pytest.mark.parametrize(
    "field, value",
    [
        ("role", "query"),
        ("pooling", "cls"),
        ("dtype", "bfloat16"),
        ("max_length", 128),
        ("model_revision", "r2"),
        ("tokenizer_revision", "t2"),
        ("truncation", "reject"),
    ],
)
def test_everything_that_changes_a_vector_is_part_of_the_key(tmp_path, field, value):
    cache = EmbeddingCache(tmp_path)
    h = [text_hash("same text")]
    cache.store(key(), h, np.ones((1, 4), np.float32))
    assert cache.lookup(key(), h)[1].all()
    assert not cache.lookup(key(**{field: value}), h)[1].any()


def test_default_dir_honours_env_and_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path / "x"))
    assert default_cache_dir() == tmp_path / "x"
    monkeypatch.delenv("EVALSUITE_CACHE_DIR")
    assert "evalsuite" in str(default_cache_dir())


def _segments(cache, k):
    return sorted(cache.shard_dir(k).glob("*.seg"))


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_corrupt_segment_is_detected_reported_and_never_used(tmp_path, damage):
    cache = EmbeddingCache(tmp_path)
    hashes = [text_hash(t) for t in ("a", "b")]
    cache.store(key(), hashes, np.ones((2, 4), np.float32))
    (seg,) = _segments(cache, key())
    data = bytearray(seg.read_bytes())
    if damage == "flip":
        data[-40] ^= 0xFF  # inside the vectors
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data = bytearray(b"not a cache file")
    seg.write_bytes(bytes(data))
    fresh = EmbeddingCache(tmp_path)
    with pytest.warns(CacheCorruptionWarning, match="unusable"):
        got, found = fresh.lookup(key(), hashes)
    assert not found.any() and not got.any()
    assert fresh.stats.corrupt == 1 and str(seg) in fresh.problems[0]
    assert not seg.exists()


def test_many_segments_are_compacted(tmp_path):
    cache = EmbeddingCache(tmp_path, compact_at=3)
    for i in range(5):
        cache.store(key(), [text_hash(str(i))], np.full((1, 4), i, np.float32))
    got, found = cache.lookup(key(), [text_hash(str(i)) for i in range(5)])
    assert found.all() and got[:, 0].tolist() == [0, 1, 2, 3, 4]
    assert len(_segments(cache, key())) == 1 and cache.stats.compactions == 1
    assert EmbeddingCache(tmp_path).lookup(key(), [text_hash("4")])[0][0, 0] == 4


@pytest.fixture(scope="module")
def info(tiny_model_dir):
    return resolve_model(str(tiny_model_dir))


def _cached(info, root, loads):
    def factory():
        loads.append(1)
        return LocalEncoder(info, device="cpu", max_length=64)

    settings = EncoderSettings(dtype="float32", device="cpu", max_length=64, truncation="truncate")
    return CachedEncoder(EmbeddingCache(root), info, settings=settings, factory=factory)


QTEXTS = ["q: " + t for t in TEXTS]


def test_cached_encoder_matches_the_model_and_warm_never_loads_it(info, tmp_path):
    direct = LocalEncoder(info, device="cpu", max_length=64).encode(QTEXTS, poolings=["mean", "cls"], role="query")
    loads = []
    cold = _cached(info, tmp_path, loads).encode(QTEXTS, poolings=["mean", "cls"], role="query")
    assert loads == [1]
    warm_encoder = _cached(info, tmp_path, loads)
    warm = warm_encoder.encode(QTEXTS, poolings=["cls", "mean"], role="query")
    assert loads == [1] and not warm_encoder.model_loaded
    assert warm_encoder.stats_by_role == {} and warm_encoder.cache_stats.hits == 2 * len(TEXTS)
    for p in ("mean", "cls"):
        np.testing.assert_allclose(cold[p], direct[p], atol=1e-6)
        np.testing.assert_array_equal(warm[p], cold[p])


def test_partial_hits_encode_only_the_missing_texts_and_poolings(info, tmp_path):
    loads = []
    _cached(info, tmp_path, loads).encode(TEXTS[:2], poolings=["mean"], role="document")
    enc = _cached(info, tmp_path, loads)
    out = enc.encode(TEXTS, poolings=["mean", "last"], role="document")
    assert enc.stats_by_role["document"].texts == len(TEXTS)  # 'last' was missing for every text
    enc2 = _cached(info, tmp_path, loads)
    enc2.encode([*TEXTS, "a new text about bread"], poolings=["mean", "last"], role="document")
    assert enc2.stats_by_role["document"].texts == 1
    direct = LocalEncoder(info, device="cpu", max_length=64).encode(TEXTS, poolings=["mean", "last"])
    for p in ("mean", "last"):
        np.testing.assert_allclose(out[p], direct[p], atol=1e-6)


def test_same_text_as_query_and_document_are_different_entries(info, tmp_path):
    loads = []
    _cached(info, tmp_path, loads).encode(["bread"], poolings=["mean"], role="query")
    enc = _cached(info, tmp_path, loads)
    enc.encode(["bread"], poolings=["mean"], role="document")
    assert enc.model_loaded and enc.cache_stats.misses == 1


def test_corrupted_cache_file_is_recomputed_by_the_encoder(info, tmp_path):
    loads = []
    first = _cached(info, tmp_path, loads).encode(TEXTS, poolings=["mean"], role="document")
    (seg,) = list(tmp_path.rglob("*.seg"))
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0x55
    seg.write_bytes(bytes(data))
    enc = _cached(info, tmp_path, loads)
    with pytest.warns(CacheCorruptionWarning):
        again = enc.encode(TEXTS, poolings=["mean"], role="document")
    assert enc.cache_stats.corrupt == 1 and enc.stats_by_role["document"].texts == len(TEXTS)
    np.testing.assert_allclose(again["mean"], first["mean"], atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheCorruptionWarning)
        healed = _cached(info, tmp_path, loads)
        healed.encode(TEXTS, poolings=["mean"], role="document")
    assert not healed.model_loaded


def test_prefixes_and_roles_rendered_by_the_contract_stay_apart_on_a_warm_cache(
    info, tmp_path, tiny_model_dir, small_beir
):
    """The same text under two prefixes, and as query vs document, gives different vectors, cold and warm
    (the tiny model's vectors depend on the token count, so the prefixes differ in length)."""
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    def contract(query_prefix):
        return prepare(
            RunSpec(
                model=str(tiny_model_dir),
                dataset=str(small_beir),
                device="cpu",
                use_cache=False,
                query_prefix=query_prefix,
                doc_prefix="search result document: ",
            )
        ).contract

    a, b = contract("q: "), contract("the question is: ")
    inputs = [(a, "query"), (b, "query"), (a, "document")]
    rendered = [c.render(role, "bread") for c, role in inputs]
    assert len(set(rendered)) == 3
    direct = LocalEncoder(info, device="cpu", max_length=64).encode(rendered, poolings=["mean"])["mean"]
    assert not np.allclose(direct[0], direct[1]) and not np.allclose(direct[0], direct[2])
    loads = []
    for (_, role), text, expected in zip(inputs, rendered, direct, strict=True):  # cold, one role at a time
        out = _cached(info, tmp_path, loads).encode([text], poolings=["mean"], role=role)["mean"][0]
        np.testing.assert_allclose(out, expected, atol=1e-6)
    for (c, role), text, expected in zip(inputs, rendered, direct, strict=True):  # warm: nothing encoded
        enc = _cached(info, tmp_path, loads)
        out = enc.encode([text], poolings=["mean"], role=role)["mean"][0]
        assert not enc.model_loaded, (c.prefix(role), role)
        np.testing.assert_allclose(out, expected, atol=1e-6)
