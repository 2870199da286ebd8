"""The result cache of one scored contract: every input is in the key, a hit equals a fresh run byte for byte
(results.json metrics, per-query scores, run.trec), a bad entry is recomputed, --no-cache bypasses it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from evalsuite.reports import write_run_reports
from evalsuite.reports.trec import trec_run
from evalsuite.run.cache import results as resultcache
from evalsuite.run.cache.results import ResultStore
from evalsuite.run.cache.scoring import score_fields
from evalsuite.run.pipeline import Prepared, prepare, run, score
from evalsuite.run.result import Result
from evalsuite.run.spec import RunSpec

METRICS = ("ndcg@10", "recall@10", "mrr@10")


@pytest.fixture
def prepared(tiny_model_dir: Path, small_beir: Path, tmp_path: Path) -> Prepared:
    return prepare(RunSpec(model=str(tiny_model_dir), dataset=str(small_beir), cache_dir=str(tmp_path / "cache")))


def vectors(prepared: Prepared) -> tuple[np.ndarray, np.ndarray]:
    """Pooled query and document vectors with ties: d2 and d4 are the same vector (tie order by id)."""
    rng = np.random.default_rng(7)
    dim = prepared.model.hidden_size
    q = rng.standard_normal((len(prepared.dataset.query_ids), dim)).astype(np.float32)
    d = rng.standard_normal((len(prepared.dataset.doc_ids), dim)).astype(np.float32)
    d[3] = d[1]
    return q, d


def scored(
    prepared: Prepared, q: np.ndarray, d: np.ndarray, metrics: tuple[str, ...] = METRICS, **contract: Any
) -> Result:
    c = prepared.contract.replace(**contract) if contract else prepared.contract
    return score(prepared, c, q, d, metrics=metrics, timing={}, device="cpu")


def status(result: Result) -> str:
    return str(result.timing["result_cache"]["status"])


def same_scores(a: Result, b: Result) -> None:
    """What results.json and run.trec hold, byte for byte."""
    assert json.dumps(a.to_dict()["metrics"]) == json.dumps(b.to_dict()["metrics"])
    assert json.dumps(a.to_dict()["per_query"]) == json.dumps(b.to_dict()["per_query"])
    assert trec_run(a.ranking) == trec_run(b.ranking)
    assert (a.ranking.depth, a.ranking.corpus_size) == (b.ranking.depth, b.ranking.corpus_size)


def test_a_hit_is_byte_identical_and_says_where_it_came_from(prepared: Prepared) -> None:
    q, d = vectors(prepared)
    cold = scored(prepared, q, d)
    warm = scored(prepared, q, d)
    off = score(
        dataclasses.replace(prepared, spec=prepared.spec.replace(use_cache=False)),
        prepared.contract,
        q,
        d,
        metrics=METRICS,
        timing={},
        device="cpu",
    )
    assert (status(cold), status(warm), status(off)) == ("miss", "hit", "off")
    same_scores(cold, warm)
    same_scores(off, warm)
    assert warm.ranking == cold.ranking  # raw float32 scores kept exactly, ties in the documented order
    hit = warm.timing["result_cache"]
    assert hit["key"] == cold.timing["result_cache"]["key"]
    assert hit["computed"] and hit["computed_search_seconds"] >= 0 and hit["computed_score_seconds"] >= 0
    assert warm.timing["search_seconds"] < 0.05 and warm.timing["score_seconds"] < 0.05  # nothing searched or scored
    assert warm.manifest["run_id"] != cold.manifest["run_id"]  # the manifest is this run's
    assert warm.doc_vectors is not None and np.array_equal(warm.doc_vectors, cold.doc_vectors)


# Each case changes one input of the search and scoring; the entry stored for the original must not serve it.
Variant = Callable[[Prepared, np.ndarray, np.ndarray], tuple[Prepared, np.ndarray, np.ndarray, dict[str, Any]]]


def _reorder_queries(p: Prepared, q: np.ndarray, d: np.ndarray) -> tuple[Prepared, np.ndarray, np.ndarray, dict]:
    ds = p.dataset
    ids = list(ds.queries)
    ids[0], ids[1] = ids[1], ids[0]  # same vectors in the same rows, attributed to other queries
    return dataclasses.replace(p, dataset=dataclasses.replace(ds, queries={i: ds.queries[i] for i in ids})), q, d, {}


def _rename_documents(p: Prepared, q: np.ndarray, d: np.ndarray) -> tuple[Prepared, np.ndarray, np.ndarray, dict]:
    ds = p.dataset
    ids = list(ds.corpus)
    ids[0], ids[2] = ids[2], ids[0]  # d1's vector row now belongs to d3 and the other way round
    return dataclasses.replace(p, dataset=dataclasses.replace(ds, corpus={i: ds.corpus[i] for i in ids})), q, d, {}


def _regrade(p: Prepared, q: np.ndarray, d: np.ndarray) -> tuple[Prepared, np.ndarray, np.ndarray, dict]:
    ds = p.dataset
    qrels = {qid: dict(j) for qid, j in ds.qrels.items()}
    first = next(iter(qrels))
    qrels[first] = dict.fromkeys(qrels[first], 0) | {ds.doc_ids[-1]: 1}
    return dataclasses.replace(p, dataset=dataclasses.replace(ds, qrels=qrels)), q, d, {}


def _bump(a: np.ndarray, row: int) -> np.ndarray:
    b = a.copy()
    b[row, 0] += 1.0
    return b


VARIANTS: dict[str, Variant] = {
    "query vectors": lambda p, q, d: (p, _bump(q, 0), d, {}),
    "document vectors": lambda p, q, d: (p, q, _bump(d, 4), {}),
    "query ids": _reorder_queries,
    "document ids": _rename_documents,
    "qrels": _regrade,
    "similarity": lambda p, q, d: (p, q, d, {"contract": {"similarity": "l2"}}),
    "metrics": lambda p, q, d: (p, q, d, {"metrics": ("ndcg@10", "recall@10")}),
    "search depth (metric cut-off)": lambda p, q, d: (p, q, d, {"metrics": (*METRICS, "recall@200")}),
    "dimension": lambda p, q, d: (p, q, d, {"contract": {"dim": 16}}),
    "normalization": lambda p, q, d: (p, q, d, {"contract": {"normalize": False, "similarity": "dot"}}),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_any_changed_input_misses_and_is_recomputed(prepared: Prepared, name: str) -> None:
    q, d = vectors(prepared)
    assert status(scored(prepared, q, d)) == "miss"
    p2, q2, d2, change = VARIANTS[name](prepared, q, d)
    metrics = change.get("metrics", METRICS)
    got = scored(p2, q2, d2, metrics, **change.get("contract", {}))
    assert status(got) == "miss", name
    fresh = score(
        dataclasses.replace(p2, spec=p2.spec.replace(use_cache=False)),
        p2.contract.replace(**change.get("contract", {})),
        q2,
        d2,
        metrics=metrics,
        timing={},
        device="cpu",
    )
    same_scores(got, fresh)
    assert status(scored(p2, q2, d2, metrics, **change.get("contract", {}))) == "hit"


@pytest.mark.parametrize("what", ["library", "code"])
def test_another_library_version_or_source_misses(
    prepared: Prepared, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    q, d = vectors(prepared)
    scored(prepared, q, d)
    if what == "library":
        real = resultcache.library_version
        monkeypatch.setattr(resultcache, "library_version", lambda dist: "0.0.1" if dist == "ranx" else real(dist))
    else:
        monkeypatch.setattr(resultcache, "code_digest", lambda modules: "edited")
    assert status(scored(prepared, q, d)) == "miss"


def _fields(**change: Any) -> dict[str, Any]:
    ds = SimpleNamespace(query_ids=["q1", "q2"], doc_ids=["d1", "d2"], qrels={"q1": {"d1": 1}})
    args: dict[str, Any] = {
        "query_vectors": np.zeros((2, 4), np.float32),
        "doc_vectors": np.ones((2, 4), np.float32),
        "k": 100,
        "similarity": "cosine",
        "index": "flat",
        "metrics": ["ndcg@10"],
    }
    for name, value in change.items():
        if name in ("query_ids", "doc_ids", "qrels"):
            setattr(ds, name, value)
        else:
            args[name] = value
    q, dv = args.pop("query_vectors"), args.pop("doc_vectors")
    return score_fields(ds, q, dv, **args)


FIELD_CHANGES: dict[str, Any] = {
    "query_vectors": np.full((2, 4), 0.5, np.float32),
    "doc_vectors": np.ones((2, 4), np.float64),  # same values, other dtype
    "query_ids": ["q2", "q1"],
    "doc_ids": ["d2", "d1"],
    "qrels": {"q1": {"d1": 2}},
    "k": 200,
    "similarity": "dot",
    "index": "hnsw:m=16",
    "metrics": ["ndcg@10", "mrr@10"],
}


@pytest.mark.parametrize("name", list(FIELD_CHANGES))
def test_every_score_input_is_a_key_field(name: str) -> None:
    base, changed = _fields(), _fields(**{name: FIELD_CHANGES[name]})
    assert ResultStore.key("score", base)[0] != ResultStore.key("score", changed)[0], name


def test_a_corrupt_truncated_or_misplaced_entry_is_recomputed(prepared: Prepared) -> None:
    q, d = vectors(prepared)
    cold = scored(prepared, q, d)
    key = cold.timing["result_cache"]["key"]
    (path,) = [p for p in (Path(prepared.spec.cache_dir or "") / "results").rglob("*.bin") if p.name.startswith(key)]
    good = path.read_bytes()
    other = scored(prepared, q, d, ("ndcg@10",))  # another entry, valid on its own
    (other_path,) = [
        p for p in path.parent.parent.parent.rglob("*.bin") if p.name.startswith(other.timing["result_cache"]["key"])
    ]
    flipped = bytearray(good)
    flipped[len(flipped) // 2] ^= 0x01
    forged = _with_header(good, fields='{"forged":1}')  # a valid entry under this key for other inputs
    for bad, why in (
        (forged, "key fields differ"),
        (bytes(flipped), "checksum mismatch"),
        (good[: len(good) // 2], "checksum mismatch"),
        (b"", "truncated"),
        (other_path.read_bytes(), "key fields differ"),
    ):
        path.write_bytes(bad)
        got = scored(prepared, q, d)
        assert status(got) == "miss", why
        assert any("unusable" in w and why in w for w in got.warnings), (why, got.warnings)
        same_scores(got, cold)
        assert path.read_bytes() != bad  # stored again
        assert status(scored(prepared, q, d)) == "hit"


def _with_header(entry: bytes, **change: Any) -> bytes:
    """``entry`` with header fields changed and a valid checksum again."""
    start = len(resultcache.MAGIC) + 8
    size = int.from_bytes(entry[len(resultcache.MAGIC) : start], "little")
    header = json.loads(entry[start : start + size]) | change
    data = json.dumps(header).encode()
    body = resultcache.MAGIC + len(data).to_bytes(8, "little") + data + entry[start + size : -32]
    return body + hashlib.sha256(body).digest()


def test_no_cache_bypasses_it(tiny_model_dir: Path, small_beir: Path, tmp_path: Path) -> None:
    spec = RunSpec(model=str(tiny_model_dir), dataset=str(small_beir), cache_dir=str(tmp_path / "c"), use_cache=False)
    result = run(spec)
    assert result.timing["result_cache"] == {"status": "off"}
    assert not (tmp_path / "c").exists()


def test_a_warm_run_writes_the_same_results_and_run_file(
    tiny_model_dir: Path, small_beir: Path, tmp_path: Path
) -> None:
    spec = RunSpec(model=str(tiny_model_dir), dataset=str(small_beir), cache_dir=str(tmp_path / "cache"))
    cold, warm = run(spec), run(spec)
    assert (status(cold), status(warm)) == ("miss", "hit")
    a, b = write_run_reports(cold, tmp_path / "cold"), write_run_reports(warm, tmp_path / "warm")
    assert a["run.trec"].read_bytes() == b["run.trec"].read_bytes()
    ja, jb = (json.loads(p["results.json"].read_text()) for p in (a, b))
    assert (ja["metrics"], ja["per_query"]) == (jb["metrics"], jb["per_query"])
    assert jb["timing"]["result_cache"]["status"] == "hit"
    assert "hit: ranking and scores read back" in b["report.md"].read_text()


def test_a_warm_run_imports_neither_faiss_nor_ranx(tiny_model_dir: Path, small_beir: Path, tmp_path: Path) -> None:
    settings = {"model": str(tiny_model_dir), "dataset": str(small_beir), "cache_dir": str(tmp_path / "cache")}
    code = (
        "import json, sys; from evalsuite.run.pipeline import run; from evalsuite.run.spec import RunSpec; "
        "r = run(RunSpec(**json.loads(sys.argv[1]))); "
        "print(json.dumps([r.timing['result_cache']['status'], "
        "sorted(m for m in ('faiss', 'ranx', 'numba', 'scipy', 'torch', 'transformers') if m in sys.modules)]))"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))

    def child() -> list[Any]:
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(settings)], capture_output=True, text=True, env=env
        )
        assert out.returncode == 0, out.stderr[-2000:]
        got: list[Any] = json.loads(out.stdout.strip().splitlines()[-1])
        return got

    cold = child()  # the same child computing: the check below can fail
    assert cold[0] == "miss" and {"faiss", "ranx", "torch"} <= set(cold[1])
    assert child() == ["hit", []]
