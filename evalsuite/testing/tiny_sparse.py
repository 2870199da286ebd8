"""Tiny random-weight learned sparse models, written to a directory as their own libraries lay them out: a SPLADE
model (a BERT MLM under sentence-transformers' ``SparseEncoder``: MLMTransformer + SpladePooling) and a BGE-M3
shaped one (the tiny XLM-RoBERTa of :mod:`.tiny_families` with a ``sparse_linear.pt`` and a ``colbert_linear.pt``).
Nothing downloads."""

from __future__ import annotations

from pathlib import Path

from .tiny_bert import write_tiny_bert


def write_tiny_splade(path: Path, *, activation: str = "relu", seed: int = 0) -> Path:
    """A SPLADE directory saved by sentence-transformers itself (``SparseEncoder.save``) over a random BERT MLM."""
    import torch
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling
    from transformers import BertConfig, BertForMaskedLM

    mlm = path.parent / f"{path.name}-mlm"
    write_tiny_bert(mlm, sentence_transformers_layout=False, seed=seed)
    torch.manual_seed(seed)
    config = BertConfig.from_pretrained(str(mlm))
    BertForMaskedLM(config).eval().save_pretrained(str(mlm))  # type: ignore[no-untyped-call]
    pooling = SpladePooling("max", activation_function=activation)  # type: ignore[arg-type]
    model = SparseEncoder(modules=[MLMTransformer(str(mlm), max_seq_length=64), pooling], device="cpu")
    model.save(str(path))
    return path


def write_tiny_bgem3(path: Path, *, seed: int = 0, hidden_size: int = 32) -> Path:
    """The tiny XLM-RoBERTa family with a random ``sparse_linear.pt`` (Linear(hidden, 1)) and ``colbert_linear.pt``
    (Linear(hidden, hidden)), as BGE-M3 ships them (FlagEmbedding loads its heads only when both are there).
    ``hidden_size`` other than the family's 32 re-makes the transformer that wide (two heads: 64 gives the head
    dimension 32 that vLLM's CPU attention needs; it refuses 16)."""
    import json

    import torch

    from .tiny_families import write_family

    write_family("xlmr", path, seed=seed)
    if hidden_size != 32:
        from transformers import XLMRobertaConfig, XLMRobertaModel

        torch.manual_seed(seed)
        config = XLMRobertaConfig.from_pretrained(str(path))
        config.hidden_size, config.intermediate_size = hidden_size, 2 * hidden_size
        XLMRobertaModel(config, add_pooling_layer=False).eval().save_pretrained(str(path))  # type: ignore[no-untyped-call]
        pooling = path / "1_Pooling" / "config.json"
        cfg = json.loads(pooling.read_text())
        cfg.update({k: hidden_size for k in ("embedding_dimension", "word_embedding_dimension") if k in cfg})
        pooling.write_text(json.dumps(cfg, indent=2))
    hidden = json.loads((path / "config.json").read_text())["hidden_size"]
    torch.manual_seed(seed + 7)
    linear = torch.nn.Linear(hidden, 1)
    torch.nn.init.normal_(linear.weight, std=1.0)
    torch.save(linear.state_dict(), path / "sparse_linear.pt")
    torch.save(torch.nn.Linear(hidden, hidden).state_dict(), path / "colbert_linear.pt")
    return path
