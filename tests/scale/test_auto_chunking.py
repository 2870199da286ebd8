"""The default path chooses bounded memory by itself for a large corpus, says why, and ranks as in memory."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import evalsuite.run.prepared as prepared_mod
from evalsuite.run.pipeline import prepare, run
from evalsuite.run.prepared import corpus_bytes, decide_chunking
from evalsuite.run.spec import AUTO_CHUNK_BYTES, AUTO_CHUNK_SIZE, RunSpec


def _sparse_corpus(root: Path, size: int, name: str = "corpus.jsonl") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / name
    with open(path, "wb") as fh:
        fh.truncate(size)  # a sparse file: its size on disk costs nothing
    return root


def test_the_threshold_is_the_corpus_files_size(tmp_path: Path) -> None:
    at = _sparse_corpus(tmp_path / "at", AUTO_CHUNK_BYTES)
    below = _sparse_corpus(tmp_path / "below", AUTO_CHUNK_BYTES - 1)
    spec, notes = decide_chunking(RunSpec(dataset=str(at)), "flat")
    assert spec.chunk_size == AUTO_CHUNK_SIZE and len(notes) == 1
    assert "the corpus is large (128 MiB)" in notes[0] and "--chunk-size 0 keeps everything in memory" in notes[0]
    assert decide_chunking(RunSpec(dataset=str(below)), "flat") == (RunSpec(dataset=str(below), chunk_size=0), ())
    # what the user said stands, in either direction
    assert decide_chunking(RunSpec(dataset=str(at), chunk_size=0), "flat")[0].chunk_size == 0
    assert decide_chunking(RunSpec(dataset=str(below), chunk_size=9), "flat")[0].chunk_size == 9
    # an approximate index is built over vectors in memory: never chunked by itself
    assert decide_chunking(RunSpec(dataset=str(at)), "hnsw") == (RunSpec(dataset=str(at), chunk_size=0), ())


def test_a_compressed_corpus_counts_at_its_expected_size(tmp_path: Path) -> None:
    root = tmp_path / "gz"
    root.mkdir()
    (root / "corpus.jsonl.gz").write_bytes(gzip.compress(b"x" * 1000))
    assert corpus_bytes(root) == (root / "corpus.jsonl.gz").stat().st_size * prepared_mod.COMPRESSION_RATIO
    arrow = tmp_path / "hf" / "corpus"
    arrow.mkdir(parents=True)
    (arrow / "data-00000-of-00001.arrow").write_bytes(b"a" * 10)
    (arrow / "state.json").write_bytes(b"{}")
    assert corpus_bytes(tmp_path / "hf") == 10 and corpus_bytes(tmp_path / "missing") == 0


def test_an_automatically_chunked_run_ranks_as_the_in_memory_one(
    tiny_model_dir: Path, minibeir_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = RunSpec(model=str(tiny_model_dir), dataset=str(minibeir_dir), device="cpu", cache_dir=str(tmp_path / "c"))
    memory = prepare(spec)
    assert memory.spec.chunk_size == 0 and memory.notes == ()
    # the fixture corpus made "large" by lowering the threshold below its size
    monkeypatch.setattr(prepared_mod, "AUTO_CHUNK_BYTES", corpus_bytes(minibeir_dir))
    monkeypatch.setattr(prepared_mod, "AUTO_CHUNK_SIZE", 50)
    chunked = prepare(spec)
    assert chunked.spec.chunk_size == 50 and "encoding 50 documents at a time" in chunked.notes[0]
    blocked, in_memory = run(spec, chunked), run(spec, memory)
    assert blocked.doc_vectors is None and in_memory.doc_vectors is not None  # the block-wise path did run
    assert blocked.metrics == in_memory.metrics
    assert {q: list(r)[:10] for q, r in blocked.ranking.items()} == {
        q: list(r)[:10] for q, r in in_memory.ranking.items()
    }


def test_the_cli_says_why_it_chunks(tiny_model_dir: Path, minibeir_dir: Path, tmp_path: Path) -> None:
    """A corpus over the threshold: the fixtures' corpus plus one document padded to 128 MiB with JSON whitespace."""
    data = tmp_path / "big"
    shutil.copytree(minibeir_dir, data)
    corpus = data / "corpus.jsonl"
    head = b'{"_id": "padding", "title": "", '
    tail = b'"text": "a document no query asks for"}\n'
    with open(corpus, "ab") as fh:
        fh.write(head + b" " * (AUTO_CHUNK_BYTES - corpus.stat().st_size - len(head) - len(tail)) + tail)
    assert corpus.stat().st_size == AUTO_CHUNK_BYTES
    proc = subprocess.run(
        [sys.executable, "-c", "from evalsuite.cli import main; main()", "run", "--model", str(tiny_model_dir),
         "--dataset", str(data), "--device", "cpu", "--no-cache", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "evalsuite: the corpus is large (128 MiB): encoding 65,536 documents at a time" in proc.stderr
