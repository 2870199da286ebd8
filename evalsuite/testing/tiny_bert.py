"""A tiny random-weight BERT with a WordPiece vocabulary of :data:`WORDS`, written to a directory.

The test fixtures and the benchmarks (``bench/``) build their models and synthetic texts from it; nothing
downloads. torch and transformers are imported inside :func:`write_tiny_bert` only.
"""

from __future__ import annotations

import json
from pathlib import Path

WORDS = [
    "the",
    "a",
    "an",
    "of",
    "to",
    "in",
    "and",
    "or",
    "is",
    "are",
    "was",
    "be",
    "how",
    "what",
    "why",
    "when",
    "which",
    "does",
    "do",
    "database",
    "transaction",
    "commit",
    "rollback",
    "index",
    "query",
    "table",
    "row",
    "column",
    "lock",
    "write",
    "read",
    "bread",
    "yeast",
    "dough",
    "oven",
    "bake",
    "flour",
    "sugar",
    "water",
    "ball",
    "game",
    "team",
    "player",
    "score",
    "rule",
    "goal",
    "basket",
    "court",
    "field",
    "star",
    "planet",
    "moon",
    "sun",
    "orbit",
    "light",
    "space",
    "garden",
    "soil",
    "seed",
    "plant",
    "leaf",
    "root",
    "money",
    "bank",
    "loan",
    "rate",
    "tax",
    "budget",
    "save",
    "network",
    "packet",
    "router",
    "protocol",
    "heart",
    "blood",
    "lung",
    "muscle",
    "bone",
    "music",
    "note",
    "chord",
    "scale",
    "rhythm",
    "train",
    "rail",
    "track",
    "station",
    "engine",
    "speed",
]


def write_tiny_bert(
    path: Path, *, pooling: str = "mean", sentence_transformers_layout: bool = True, hidden: int = 32, seed: int = 0
) -> Path:
    """Save a random-weight BERT (and its WordPiece tokenizer) to ``path``."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast  # type: ignore[attr-defined]

    path.mkdir(parents=True, exist_ok=True)
    vocab = (
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        + list(dict.fromkeys(WORDS))
        + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
        + list("abcdefghijklmnopqrstuvwxyz0123456789.,?!-'")
    )
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    # transformers 5 builds a fast tokenizer's vocabulary from ``vocab`` (a vocab_file alone leaves only the
    # special tokens, and every word becomes [UNK]).
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True, model_max_length=128)
    tok.save_pretrained(str(path))
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=128,
    )
    BertModel(config).eval().save_pretrained(str(path))  # type: ignore[no-untyped-call]
    if sentence_transformers_layout:
        (path / "modules.json").write_text(
            json.dumps(
                [
                    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
                ]
            )
        )
        (path / "1_Pooling").mkdir(exist_ok=True)
        (path / "1_Pooling" / "config.json").write_text(
            json.dumps(
                {
                    "word_embedding_dimension": hidden,
                    "pooling_mode_cls_token": pooling == "cls",
                    "pooling_mode_mean_tokens": pooling == "mean",
                    "pooling_mode_lasttoken": pooling == "last",
                }
            )
        )
        (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64, "do_lower_case": False}))
    return path
