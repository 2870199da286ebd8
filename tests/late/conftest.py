"""A tiny random BERT whose tokenizer knows its words (see tests/rerank/conftest.py for why it is re-saved)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def late_model_dir(tmp_path_factory: pytest.TempPathFactory, make_tiny_bert: Callable[..., Path]) -> Path:
    from transformers import BertTokenizerFast

    path = make_tiny_bert(tmp_path_factory.mktemp("late") / "bert", sentence_transformers_layout=False)
    words = (path / "vocab.txt").read_text().splitlines()
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (path / name).unlink(missing_ok=True)
    BertTokenizerFast(
        vocab={w: i for i, w in enumerate(words)}, do_lower_case=True, model_max_length=128
    ).save_pretrained(str(path))
    return path
