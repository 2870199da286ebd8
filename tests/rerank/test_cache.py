"""The reranker score cache: what its key holds, hits and misses, a warm run without the model, corrupt segments."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from evalsuite.encode.cache import CacheCorruptionWarning
from evalsuite.rerank.cache import CachedReranker, ScoreCache, ScoreKey, pair_hash
from evalsuite.rerank.contract import RerankerContract
from evalsuite.rerank.local import RerankStats, ScoredPairs
from evalsuite.run.result import read_results

BASE = RerankerContract(
    model="ce",
    model_revision="r" * 40,
    tokenizer_revision="t" * 40,
    activation="sigmoid",
    template="pair",
    max_length=64,
)
# one change per contract field that changes a score; the model's name is not one (the revision pins the weights)
CHANGES = {
    "model_revision": "s" * 40,
    "tokenizer_revision": "u" * 40,
    "activation": "none",
    "template": "{query} | {document}",
    "max_length": 32,
    "truncation": "reject",
    "dtype": "bfloat16",
}
PAIRS = [("why does bread rise", "yeast makes dough rise"), ("why does bread rise", "a team scores"), ("q", "d")]


class StubReference:
    """Stands in for LocalReranker: a score that depends on every contract field and the pair; counts its pairs."""

    def __init__(self, contract: RerankerContract) -> None:
        self.contract = contract
        self.stats = RerankStats()
        self.scored: list[tuple[str, str]] = []

    def score_rows(self, pairs, ids=None):
        self.scored += pairs
        self.stats.pairs += len(pairs)
        seed = json.dumps(self.contract.to_dict(), sort_keys=True)
        scores = np.array([(hash((seed, p)) % 10_007) / 10_007 for p in pairs])
        return ScoredPairs(scores, np.full(len(pairs), 7, dtype=np.int32), np.zeros(len(pairs), dtype=bool))


def stub_reranker(root: Path, contract: RerankerContract) -> tuple[CachedReranker, list[StubReference]]:
    built: list[StubReference] = []

    def factory():
        built.append(StubReference(contract))
        return built[-1]

    return CachedReranker(ScoreCache(root), contract, factory), built  # type: ignore[arg-type]


def test_the_key_holds_every_contract_field_but_the_model_name():
    key_fields = {f.name for f in dataclasses.fields(ScoreKey)} - {"kind", "dim"}
    assert key_fields == {f.name for f in dataclasses.fields(RerankerContract)} - {"model"} == set(CHANGES)
    assert ScoreKey.of(BASE.replace(model="renamed")) == ScoreKey.of(BASE)


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_changing_a_field_misses_and_the_old_entries_still_hit(tmp_path, field):
    changed = BASE.replace(**{field: CHANGES[field]})
    assert ScoreKey.of(changed).digest() != ScoreKey.of(BASE).digest()
    cold, _ = stub_reranker(tmp_path, BASE)
    expected = cold.score(PAIRS)
    other, other_built = stub_reranker(tmp_path, changed)
    other.score(PAIRS)
    assert other_built and len(other_built[0].scored) == len(PAIRS)  # every pair missed
    assert other.stats.cache.hits == 0 and other.stats.cache.misses == len(PAIRS)
    warm, warm_built = stub_reranker(tmp_path, BASE)
    assert warm.score(PAIRS).tobytes() == expected.tobytes() and not warm_built


def test_a_renamed_model_of_the_same_revision_hits(tmp_path):
    stub_reranker(tmp_path, BASE)[0].score(PAIRS)
    renamed, built = stub_reranker(tmp_path, BASE.replace(model="/elsewhere/ce"))
    renamed.score(PAIRS)
    assert not built and renamed.stats.to_dict()["cache"] == {"hits": 3, "misses": 0, "corrupt": 0}


def test_the_row_is_the_rendered_pair():
    template = BASE.replace(template="{query} {document}")
    assert pair_hash(BASE, "a b", "c") != pair_hash(BASE, "a", "b c")  # the split between the texts counts
    assert pair_hash(template, "a b", "c") == pair_hash(template, "a", "b c")  # one text: only it counts
    assert pair_hash(BASE, "a", "b") != pair_hash(template.replace(template="{query}\n{document}"), "a", "b")


def test_only_missing_pairs_are_scored_each_distinct_pair_once(tmp_path):
    first, _ = stub_reranker(tmp_path, BASE)
    first.score(PAIRS[:1])
    mixed, built = stub_reranker(tmp_path, BASE)
    scores = mixed.score([*PAIRS, PAIRS[1]], ["a", "b", "c", "b2"])
    assert built[0].scored == PAIRS[1:]  # the cached pair is not rescored, the repeated one is scored once
    assert scores[1] == scores[3]
    stats = mixed.stats.to_dict()
    assert stats["cached_pairs"] == 1 and stats["cached_tokens"] == 7 and stats["pairs"] == 2
    assert stats["cache"]["hits"] == 1 and stats["cache"]["misses"] == 3 and stats["model_loaded"] is True


def test_scores_are_stored_bit_for_bit(tmp_path):
    cache = ScoreCache(tmp_path)
    key = ScoreKey.of(BASE)
    values = np.array([0.1, 1 / 3, np.nextafter(0.5, 1.0), -2.5e-300, 5e-324, 0.999999999999999])
    hashes = [bytes([i]) * 16 for i in range(len(values))]
    cache.store_scores(key, hashes, ScoredPairs(values, np.arange(6, dtype=np.int32), np.ones(6, dtype=bool)))
    got, found = ScoreCache(tmp_path).lookup_scores(key, hashes[::-1])
    assert found.all() and got.scores.tobytes() == values[::-1].tobytes()
    assert got.tokens.tolist() == [5, 4, 3, 2, 1, 0] and got.truncated.all()


# -- with the tiny cross-encoder and a real first stage -------------------------------------------------------


@pytest.fixture(scope="module")
def first_stage(tiny_model_dir, tmp_path_factory, make_beir, small_beir_records):
    from evalsuite.rerank.run import run_first_stage
    from evalsuite.run.spec import RunSpec

    corpus, queries, qrels = small_beir_records
    data = make_beir(tmp_path_factory.mktemp("rr-cache"), corpus, queries, qrels)
    spec = RunSpec(model=str(tiny_model_dir), dataset=str(data), device="cpu", use_cache=False, metrics=("ndcg@10",))
    return run_first_stage(spec, [6])[1]


def two_stage(first, cross_encoder_dir, cache_dir, depths, **rerank):
    from evalsuite.rerank.run import RerankSpec, run_two_stage
    from evalsuite.run.spec import RunSpec

    spec = RunSpec(device="cpu", cache_dir=str(cache_dir) if cache_dir else None, use_cache=cache_dir is not None)
    return run_two_stage(spec, RerankSpec(reranker=str(cross_encoder_dir), **rerank), depths, first=first)


def no_model(monkeypatch):
    """Loading the reranker raises: a run that needs it fails."""
    from evalsuite.rerank import local

    def refuse(*args, **kwargs):
        raise AssertionError("the reranker model was loaded")

    monkeypatch.setattr(local.LocalReranker, "__init__", refuse)


def test_warm_run_loads_no_model_and_gives_the_cold_scores(first_stage, cross_encoder_dir, tmp_path, monkeypatch):
    cold = two_stage(first_stage, cross_encoder_dir, tmp_path, [6])
    uncached = two_stage(first_stage, cross_encoder_dir, None, [6])
    n = cold[0].timing["pairs_scored"]
    assert cold[0].timing["reranker"]["cache"] == {"hits": 0, "misses": n, "corrupt": 0}
    assert cold[0].timing["reranker"]["pairs"] == n and cold[0].timing["reranker"]["model_loaded"] is True
    no_model(monkeypatch)
    # a depth sweep reuses the deepest depth's pairs: every shallower depth is a hit too
    warm = two_stage(first_stage, cross_encoder_dir, tmp_path, [2, 4, 6])
    assert warm[-1].pair_scores == cold[0].pair_scores  # float == float: bit-identical
    np.testing.assert_allclose(
        [warm[-1].pair_scores[q][d] for q in uncached[0].pair_scores for d in uncached[0].pair_scores[q]],
        [uncached[0].pair_scores[q][d] for q in uncached[0].pair_scores for d in uncached[0].pair_scores[q]],
        rtol=0,
        atol=1e-6,
    )
    assert warm[-1].metrics == cold[0].metrics
    timing = warm[-1].timing["reranker"]
    assert timing["model_loaded"] is False and timing["pairs"] == 0
    assert timing["cache"] == {"hits": n, "misses": 0, "corrupt": 0}
    assert timing["cached_pairs"] == n and timing["cached_tokens"] == cold[0].timing["reranker"]["tokens"] > 0
    with pytest.raises(AssertionError, match="the reranker model was loaded"):  # a changed max length misses
        two_stage(first_stage, cross_encoder_dir, tmp_path, [6], max_length=16)


@pytest.mark.parametrize("damage", ["flip a byte", "truncate"])
def test_a_corrupt_segment_is_reported_and_rescored(first_stage, cross_encoder_dir, tmp_path, damage):
    cold = two_stage(first_stage, cross_encoder_dir, tmp_path, [6])
    cache = ScoreCache(tmp_path)
    (segment,) = cache.shard_dir(ScoreKey.of(cold[0].contract)).glob("*.seg")  # type: ignore[arg-type]
    data = bytearray(segment.read_bytes())
    if damage == "flip a byte":
        data[len(data) // 2] ^= 0x40
    else:
        del data[len(data) - 9 :]
    segment.write_bytes(bytes(data))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = two_stage(first_stage, cross_encoder_dir, tmp_path, [6])
    assert any(
        issubclass(w.category, CacheCorruptionWarning) and "reranker score cache segment" in str(w.message)
        for w in caught
    )
    assert again[0].timing["reranker"]["cache"]["corrupt"] == 1 and again[0].timing["reranker"]["model_loaded"]
    assert again[0].pair_scores == cold[0].pair_scores
    assert not segment.exists()
    warm = two_stage(first_stage, cross_encoder_dir, tmp_path, [6])  # the rescored pairs were stored again
    assert warm[0].timing["reranker"]["cache"]["misses"] == 0


def test_no_cache_writes_nothing(first_stage, cross_encoder_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path / "cache"))
    (r,) = two_stage(first_stage, cross_encoder_dir, None, [3])
    assert "cache" not in r.timing["reranker"] and not (tmp_path / "cache").exists()


WARM_WITHOUT_TORCH = """
import sys


class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("torch", "transformers"):
            raise ImportError(f"{name} was imported by a warm run")


sys.meta_path.insert(0, Refuse())
from evalsuite.cli import main

code = main(sys.argv[1:])
assert not {"torch", "transformers"} & set(sys.modules), "imported"
sys.exit(code)
"""


def test_warm_cli_run_imports_neither_torch_nor_transformers(tiny_model_dir, cross_encoder_dir, small_beir, tmp_path):
    from evalsuite.cli import main

    def argv(out):
        return [
            *("rerank", "--model", str(tiny_model_dir), "--dataset", str(small_beir), "--device", "cpu"),
            *("--cache-dir", str(tmp_path / "cache"), "--reranker", str(cross_encoder_dir), "--rerank-depth", "2,5"),
            *("--out", str(out)),
        ]

    assert main(argv(tmp_path / "cold")) == 0
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.run(
        [sys.executable, "-c", WARM_WITHOUT_TORCH, *argv(tmp_path / "warm")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    cold, warm = (read_results(tmp_path / d / "results.json") for d in ("cold", "warm"))
    assert [d["metrics"] for d in warm["reranked"]] == [d["metrics"] for d in cold["reranked"]]
    assert [d["per_query"] for d in warm["reranked"]] == [d["per_query"] for d in cold["reranked"]]
    assert (tmp_path / "warm" / "run.trec").read_text() == (tmp_path / "cold" / "run.trec").read_text()
    timing = warm["reranked"][0]["timing"]["reranker"]
    assert timing["model_loaded"] is False and timing["cache"]["misses"] == 0
