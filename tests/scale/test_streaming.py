"""A chunked run reads the corpus from disk a chunk at a time and gives exactly the in-memory run's results:
the same results.json metrics, per-query scores and slices, the same run.trec, on a synthetic corpus file
(plain and gzipped) and on minibeir."""

from __future__ import annotations

import gzip
import json
import random
import string
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.datasets import LazyCorpus
from evalsuite.datasets.ondisk import OnDiskCorpus
from evalsuite.encode.executors import Execution
from evalsuite.reports import write_run_reports
from evalsuite.run.pipeline import prepare, run
from evalsuite.run.spec import RunSpec

N_DOCS = 2500
CHUNK, BLOCK = "300", "700"  # neither divides the corpus


def write_synthetic(root: Path, suffix: str = "") -> Path:
    """A BEIR directory of N_DOCS documents (some empty, some with a title and a topic), written line by line."""
    rng = random.Random(11)
    vocab = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8))) for _ in range(400)]
    texts = []
    (root / "qrels").mkdir(parents=True)
    opener = gzip.open if suffix == ".gz" else open
    with opener(root / f"corpus.jsonl{suffix}", "wt", encoding="utf-8") as fh:
        for i in range(N_DOCS):
            text = "" if i % 211 == 5 else " ".join(rng.choice(vocab) for _ in range(rng.randint(4, 60)))
            title = rng.choice(["", "", "é " + rng.choice(vocab)])
            texts.append(text)
            fh.write(json.dumps({"_id": f"doc{i}", "title": title, "text": text, "topic": f"t{i % 3}"}) + "\n")
    queries, qrels = [], []
    for q in range(60):
        target = rng.randrange(N_DOCS)
        words = texts[target].split() or ["empty"]
        queries.append({"_id": f"q{q}", "text": " ".join(words[:6]), "topic": f"t{target % 3}"})
        qrels += [(f"q{q}", f"doc{target}", 2), (f"q{q}", f"doc{(target + 1) % N_DOCS}", 1)]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in qrels)
    )
    return root


def cli_run(out: Path, model: Path, dataset: Path, *extra: str) -> dict:
    argv = ["run", "--model", str(model), "--dataset", str(dataset), "--device", "cpu", "--out", str(out), *extra]
    assert main(argv) == 0
    return json.loads((out / "results.json").read_text())


def same_results(a: dict, b: dict, out_a: Path, out_b: Path) -> None:
    assert a["metrics"] == b["metrics"] and a["per_query"] == b["per_query"]
    assert a.get("slices") == b.get("slices")
    assert a["dataset"]["sha256"] == b["dataset"]["sha256"] and a["dataset"]["counts"] == b["dataset"]["counts"]
    assert (out_a / "run.trec").read_text() == (out_b / "run.trec").read_text()


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("synthetic")
    return {"": write_synthetic(base / "plain"), ".gz": write_synthetic(base / "gz", ".gz")}


def test_a_streamed_chunked_run_equals_the_in_memory_run(tiny_model_dir, synthetic, tmp_path):
    cache = ["--cache-dir", str(tmp_path / "cache")]
    memory = cli_run(tmp_path / "memory", tiny_model_dir, synthetic[""], *cache)
    assert memory["dataset"]["counts"]["empty_documents"] > 0 and memory["slices"]["slices"]
    for suffix, path in synthetic.items():
        out = tmp_path / f"streamed{suffix}"
        chunked = ["--chunk-size", CHUNK, "--block-rows", BLOCK, "--store-dir", str(tmp_path / f"store{suffix}")]
        streamed = cli_run(out, tiny_model_dir, path, *cache, *chunked)
        # every document text read from disk is the very text the in-memory run encoded: all cache hits
        assert streamed["timing"]["cache"]["misses"] == 0 and streamed["timing"]["cache"]["hits"] > 0
        same_results(memory, streamed, tmp_path / "memory", out)
        assert list((tmp_path / f"store{suffix}").glob("corpus-*")) == []  # the spool went with the run


def test_streamed_and_in_memory_chunked_runs_encode_the_same_chunks(tiny_model_dir, synthetic, tmp_path):
    # no cache: both runs encode every chunk; the texts and their order within each chunk must be the same
    spec = RunSpec(model=str(tiny_model_dir), dataset=str(synthetic[".gz"]), device="cpu", use_cache=False)
    execution = Execution(chunk_size=int(CHUNK), block_rows=int(BLOCK))
    eager_prepared = prepare(spec)
    streamed_spec = spec.replace(chunk_size=int(CHUNK), block_rows=int(BLOCK))
    streamed_prepared = prepare(streamed_spec)
    assert not isinstance(eager_prepared.dataset.corpus, LazyCorpus)
    assert isinstance(streamed_prepared.dataset.corpus, OnDiskCorpus)
    eager = run(spec, eager_prepared, execution=execution)
    streamed = run(streamed_spec, streamed_prepared)
    assert streamed.timing["documents"]["texts"] == N_DOCS
    write_run_reports(eager, tmp_path / "eager")
    write_run_reports(streamed, tmp_path / "streamed")
    a, b = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("eager", "streamed"))
    same_results(a, b, tmp_path / "eager", tmp_path / "streamed")
    counts = ("texts", "tokens", "padded_tokens", "truncated", "batches")
    assert [streamed.timing["documents"][k] for k in counts] == [eager.timing["documents"][k] for k in counts]


def test_minibeir_streamed_equals_in_memory(tiny_model_dir, minibeir_dir, tmp_path):
    cache = ["--cache-dir", str(tmp_path / "cache")]
    memory = cli_run(tmp_path / "memory", tiny_model_dir, minibeir_dir, *cache)
    streamed = cli_run(
        tmp_path / "streamed", tiny_model_dir, minibeir_dir, *cache, "--chunk-size", "50", "--block-rows", "64"
    )
    assert streamed["timing"]["cache"]["misses"] == 0
    same_results(memory, streamed, tmp_path / "memory", tmp_path / "streamed")


def test_a_chunked_run_reads_each_stored_block_once(tiny_model_dir, minibeir_dir, tmp_path, monkeypatch):
    """The search and the integrity check share one pass over the store: a second pass (the integrity check
    reading every block again) doubles the disk reads on the path meant for corpora larger than memory."""
    from evalsuite.encode.store import VectorStore

    reads: list[tuple[int, int]] = []
    read_block = VectorStore.read_block

    def counted(self: VectorStore, start: int, stop: int):  # type: ignore[no-untyped-def]
        reads.append((start, stop))
        return read_block(self, start, stop)

    monkeypatch.setattr(VectorStore, "read_block", counted)
    spec = RunSpec(
        model=str(tiny_model_dir),
        dataset=str(minibeir_dir),
        device="cpu",
        use_cache=False,
        chunk_size=50,
        block_rows=64,
    )
    prepared = prepare(spec)
    result = run(spec, prepared)
    n = prepared.dataset.identity.n_documents
    assert sorted(reads) == [(a, min(a + 64, n)) for a in range(0, n, 64)], reads  # every block, once
    assert result.doc_integrity is not None and result.doc_integrity.n == n  # and every row was checked
