"""Tiny models of each family (evalsuite.testing.tiny_families), built once per session, and sentence-transformers as
the oracle (a test dependency)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalsuite.testing.tiny_bert import WORDS
from evalsuite.testing.tiny_families import write_family


@pytest.fixture(scope="session")
def family_dir(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``family_dir(name)``: the tiny model of that family (built on first use, then shared)."""
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            built[name] = write_family(name, tmp_path_factory.mktemp(f"family-{name}"))
        return built[name]

    return get


@pytest.fixture(scope="session")
def st_oracle() -> Callable[[Path], Any]:
    """``st_oracle(dir)``: sentence-transformers' model of a directory, on CPU."""
    try:
        import sentence_transformers as st
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(
                "sentence-transformers is not installed; CI must run the parity tests (pip install -e '.[test]')"
            )
        pytest.skip("sentence-transformers is not installed (pip install -e '.[test]')")

    def load(path: Path) -> Any:
        return st.SentenceTransformer(str(path), device="cpu", local_files_only=True)

    return load


def _words(i: int, n: int) -> str:
    words = list(dict.fromkeys(WORDS))
    return " ".join(words[(i * 7 + k * 3) % len(words)] for k in range(n))


# texts of different lengths (one empty, one long), so batches are padded
TEXTS = ["", "x", *(_words(i, 2 + (i * 5) % 23) for i in range(14)), _words(99, 110)]


@pytest.fixture(scope="session")
def family_dataset(tmp_path_factory: pytest.TempPathFactory, make_beir: Callable[..., Path]) -> Path:
    """30 documents and 10 queries over WORDS, each query relevant to three documents (graded)."""
    corpus = [{"_id": f"d{i}", "title": "", "text": _words(i, 4 + i % 9)} for i in range(30)]
    queries = [{"_id": f"q{i}", "text": _words(i * 3, 3)} for i in range(10)]
    qrels = [(f"q{i}", f"d{(i * 3 + k) % 30}", 2 - (k > 0)) for i in range(10) for k in range(3)]
    return make_beir(tmp_path_factory.mktemp("family-data"), corpus, queries, qrels)
