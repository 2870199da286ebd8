"""Tiny random-weight cross-encoders (BertForSequenceClassification, one label), built once per session.

The classifier weights are scaled up so scores spread across pairs (a random head of std 0.02 would give
logits within a few hundredths of each other); nothing here imports torch at collection time.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def real_vocab_tokenizer(path: Path) -> None:
    """Re-save the tokenizer of ``path`` from its vocab.txt as a mapping.

    Under transformers 5, ``BertTokenizerFast(vocab_file=...)`` (what the shared tiny BERT uses) keeps only
    the five special tokens, so every word reads as [UNK]; a reranker test needs the words.
    """
    from transformers import BertTokenizerFast

    words = (path / "vocab.txt").read_text().splitlines()
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}, do_lower_case=True, model_max_length=128)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (path / name).unlink(missing_ok=True)
    tok.save_pretrained(str(path))


def write_tiny_cross_encoder(
    write_bert: Callable[..., Path],
    path: Path,
    *,
    seed: int = 0,
    hidden: int = 32,
    head_scale: float = 3.0,
    init_range: float = 0.3,
    activation: str | None = None,
) -> Path:
    """Save a random one-label BERT cross-encoder and its WordPiece tokenizer (the tiny BERT's vocabulary)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    write_bert(path, sentence_transformers_layout=False, hidden=hidden, seed=seed)
    real_vocab_tokenizer(path)
    torch.manual_seed(seed)
    config = BertConfig.from_pretrained(str(path))
    config.num_labels = 1
    config.initializer_range = init_range  # a wide init makes the [CLS] state depend on the pair
    model = BertForSequenceClassification(config).eval()
    with torch.no_grad():
        model.classifier.weight.mul_(head_scale)
        # centre the logits on a few probe pairs, so a sigmoid does not flatten them
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(path))
        probe = tok(
            ["how does a database commit", "why does bread rise", "the team score"],
            ["a transaction commit is durable", "the ball goes through the basket", "yeast makes dough rise"],
            padding=True,
            return_tensors="pt",
        )
        model.classifier.bias.sub_(model(**probe).logits.mean())
    model.save_pretrained(str(path))
    if activation is not None:
        cfg = json.loads((path / "config.json").read_text())
        cfg["sentence_transformers"] = {"activation_fn": activation}
        (path / "config.json").write_text(json.dumps(cfg, indent=2))
    return path


@pytest.fixture(scope="session")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory, make_tiny_bert: Callable[..., Path]) -> Path:
    """A tiny cross-encoder that declares nothing about its activation (sigmoid by default)."""
    return write_tiny_cross_encoder(make_tiny_bert, tmp_path_factory.mktemp("tiny-ce") / "ce")


@pytest.fixture(scope="session")
def make_cross_encoder(make_tiny_bert: Callable[..., Path]) -> Callable[..., Path]:
    def make(path: Path, **kw: object) -> Path:
        return write_tiny_cross_encoder(make_tiny_bert, path, **kw)  # type: ignore[arg-type]

    return make


@pytest.fixture(scope="session")
def copy_dir():
    def copy(src: Path, dest: Path) -> Path:
        shutil.copytree(src, dest)
        return dest

    return copy
