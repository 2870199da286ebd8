"""A decoder embedding engine written from transformers alone (not evalsuite's encoder), for the loopback fault
server (tests/canary/fault_server.py): each request's texts are one batch, tokenized by the model's tokenizer,
padded on ``padding_side``, run through the model, pooled at the batch's last position (``last``: what a
left-padding engine does, and what a right-padding one gets wrong) or by the masked mean (``mean``), optionally
without the EOS the tokenizer appends (``eos=False``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


class DecoderEngine:
    """``encode(texts, poolings=[p])`` as the fault server calls it: ``{p: pooled vectors}`` (not normalized)."""

    def __init__(self, model_dir: Path, max_length: int, *, padding_side: str = "left", eos: bool = True) -> None:
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        self.model = AutoModel.from_pretrained(str(model_dir), dtype="float32").eval()
        self.max_length = max_length
        self.padding_side = padding_side
        self.eos = eos
        self.batches: list[int] = []  # the size of every batch encoded

    def encode(self, texts: Sequence[str], *, poolings: Sequence[str]) -> dict[str, Any]:
        import torch

        self.tokenizer.padding_side = self.padding_side
        enc = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            add_special_tokens=self.eos,
            return_tensors="pt",
        )
        self.batches.append(len(texts))
        with torch.inference_mode():
            h = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        out = {}
        for p in poolings:
            if p == "last":
                out[p] = h[:, -1].numpy()
            elif p == "mean":
                out[p] = ((h * mask).sum(1) / mask.sum(1).clamp(min=1)).numpy()
            else:
                raise ValueError(f"pooling {p!r}: this engine pools last or mean")
        return out
