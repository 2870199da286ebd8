"""What a model directory declares about its learned sparse output (pure: JSON and a tensor's shape, no model).

Two families, read from the files their own libraries write:

* **SPLADE** (sentence-transformers' ``SparseEncoder`` layout): ``modules.json`` lists an ``MLMTransformer`` and a
  ``SpladePooling`` (its ``config.json``: ``pooling_strategy`` max or sum, ``activation_function`` relu or
  log1p_relu); ``config_sentence_transformers.json`` may declare ``max_active_dims``. A vector is the MLM logits,
  masked, ``log(1 + ReLU)`` (twice for log1p_relu), pooled over the tokens. A ``Router`` (a query side and a
  document side, e.g. an inference-free document encoder) is refused: only one side is implemented here.
* **BGE-M3** (FlagEmbedding's layout): a ``sparse_linear.pt`` beside the transformer, a ``Linear(hidden, 1)``
  applied to the last hidden states, ReLU, one weight per token id (the largest over its occurrences), the
  special tokens (CLS, EOS, PAD, UNK) dropped, as ``BGEM3FlagModel.encode(return_sparse=True)`` computes
  ``lexical_weights``.

:func:`sparse_head` says which one a directory is, or raises :class:`ModelError` naming what is missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..base.errors import ModelError

SPLADE_POOLINGS = ("max", "sum")
SPLADE_ACTIVATIONS = ("relu", "log1p_relu")


@dataclass(frozen=True)
class SparseHead:
    """``family`` splade or bgem3; ``pooling`` and ``activation`` (SPLADE), ``linear`` (BGE-M3's sparse_linear.pt),
    ``max_active_dims`` (SPLADE's declared pruning, None: none)."""

    family: Literal["splade", "bgem3"]
    vocab_size: int
    pooling: str = "max"
    activation: str = "relu"
    linear: Path | None = None
    max_active_dims: int | None = None

    def describe(self) -> str:
        if self.family == "bgem3":
            return "BGE-M3 sparse_linear + ReLU, max per token id, special tokens dropped"
        return f"SPLADE: MLM logits, log(1 + ReLU){' twice' if self.activation == 'log1p_relu' else ''}, {self.pooling} over tokens"


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path}: cannot read it as JSON ({exc}); fix or restore the file") from None


def _vocab_size(root: Path) -> int:
    config = _json(root / "config.json")
    size = config.get("vocab_size") if isinstance(config, dict) else None
    if not isinstance(size, int) or size < 1:
        raise ModelError(f"{root / 'config.json'}: no vocab_size; a sparse head scores the model's vocabulary")
    return size


def sparse_head(root: Path, hidden_size: int) -> SparseHead:
    """The sparse head ``root`` declares; :class:`ModelError` when it has none or declares one that cannot run."""
    modules_file = root / "modules.json"
    modules = _json(modules_file) if modules_file.is_file() else []
    types = [str(m.get("type", "")) for m in modules if isinstance(m, dict)] if isinstance(modules, list) else []
    if any(t.endswith(".Router") for t in types):
        raise ModelError(
            f"{modules_file}: a Router (separate query and document encoders) is not implemented by the sparse "
            "reference; use a SPLADE model with one encoder for both sides"
        )
    if any(t.endswith("SpladePooling") for t in types):
        return _splade(root, modules, _vocab_size(root))
    linear = root / "sparse_linear.pt"
    if linear.is_file():
        _check_linear(linear, hidden_size)
        return SparseHead("bgem3", _vocab_size(root), linear=linear)
    raise ModelError(
        f"{root}: no sparse head: --retrieval sparse needs a SPLADE model (sentence-transformers SparseEncoder: "
        "modules.json with SpladePooling) or a BGE-M3 directory with sparse_linear.pt; use --retrieval dense or bm25"
    )


def _splade(root: Path, modules: object, vocab: int) -> SparseHead:
    assert isinstance(modules, list)
    entry = next(m for m in modules if str(m.get("type", "")).endswith("SpladePooling"))
    config_file = root / str(entry.get("path", "")) / "config.json"
    config = _json(config_file) if config_file.is_file() else {}
    if not isinstance(config, dict):
        raise ModelError(f"{config_file}: not a JSON object")
    pooling = config.get("pooling_strategy", "max")
    activation = config.get("activation_function", "relu")
    if pooling not in SPLADE_POOLINGS or activation not in SPLADE_ACTIVATIONS:
        raise ModelError(
            f"{config_file}: pooling_strategy {pooling!r} / activation_function {activation!r} is not one the sparse "
            f"reference implements ({'/'.join(SPLADE_POOLINGS)}, {'/'.join(SPLADE_ACTIVATIONS)})"
        )
    dims = config.get("embedding_dimension") or config.get("word_embedding_dimension")
    if isinstance(dims, int) and dims != vocab:
        raise ModelError(
            f"{config_file}: the pooling declares {dims} dimensions but the model's vocabulary has {vocab} tokens; "
            "a SPLADE vector has one weight per vocabulary token: rebuild the model directory"
        )
    st = root / "config_sentence_transformers.json"
    st_config = _json(st) if st.is_file() else {}
    active = st_config.get("max_active_dims") if isinstance(st_config, dict) else None
    if active is not None and (not isinstance(active, int) or active < 1):
        raise ModelError(f"{st}: max_active_dims {active!r} must be a positive integer")
    return SparseHead("splade", vocab, str(pooling), str(activation), max_active_dims=active)


def _check_linear(path: Path, hidden_size: int) -> None:
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a file torch cannot read: any of its many errors
        raise ModelError(
            f"{path}: cannot load it ({type(exc).__name__}: {exc}); restore the model's sparse head"
        ) from None
    weight = state.get("weight") if isinstance(state, dict) else None
    bias = state.get("bias") if isinstance(state, dict) else None
    if weight is None or tuple(weight.shape) != (1, hidden_size) or (bias is not None and tuple(bias.shape) != (1,)):
        shape = tuple(weight.shape) if weight is not None else None
        raise ModelError(
            f"{path}: sparse_linear must be a Linear({hidden_size}, 1) (weight shape (1, {hidden_size}), bias (1,)); "
            f"found weight {shape}: the file belongs to another model or is damaged"
        )
