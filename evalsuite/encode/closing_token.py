"""The reference encoder with the closing special token dropped: the diagnosis's model of a server whose
tokenizer lost it (``no_closing``: a GGUF converted with ``tokenizer.ggml.add_eos_token`` false), or of one that
truncates by cutting the token list after adding it (``cut``: llama-cpp-python keeps ``tokens[:n_batch]``, so an
over-long input loses its [SEP]) (issue 31).

The text is tokenized by the reference tokenizer one token longer than ``max_length``, then its closing special
token ([SEP] for BERT, EOS for decoders that add one) is dropped: from every text (``no_closing``) or only from the
texts that reached that longer limit (``cut``). Either way an over-long text keeps exactly the first
``max_length`` tokens such a server keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .local import LocalEncoder

CLOSING_MODES = ("no_closing", "cut")


def closing_token_id(tokenizer: Any) -> int | None:
    """The special token the tokenizer puts after every text, or None when it adds none."""
    ids = tokenizer("a")["input_ids"]
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    if len(ids) <= len(plain) or ids[-len(plain) :] == plain:
        return None  # nothing follows the text
    last = int(ids[-1])
    return last if last in set(tokenizer.all_special_ids) else None


class ClosingTokenEncoder(LocalEncoder):
    """:class:`LocalEncoder` whose inputs lose the closing special token as ``mode`` says (``closing_id``: None
    when the tokenizer adds none, and then it encodes as the reference does)."""

    def __init__(self, *args: Any, mode: str, max_length: int, **kwargs: Any) -> None:
        if mode not in CLOSING_MODES:
            raise ValueError(f"unknown closing-token mode {mode!r}; choose one of {', '.join(CLOSING_MODES)}")
        super().__init__(*args, max_length=max_length, **kwargs)
        self.mode = mode
        self.limit = max_length
        self.closing_id = closing_token_id(self.tokenizer)
        if self.closing_id is not None:
            self.max_length = min(max_length + 1, self.info.max_positions)

    def _tokenize(self, texts: list[str], ids: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        flat, offsets, truncated = super()._tokenize(texts, ids)
        if self.closing_id is None or len(texts) == 0:
            return flat, offsets, truncated
        lengths = np.diff(offsets)
        last = offsets[1:] - 1
        drop = (lengths > 0) & (flat[np.maximum(last, 0)] == self.closing_id)
        if self.mode == "cut":
            drop &= lengths > self.limit
        keep = np.ones(len(flat), dtype=bool)
        keep[last[drop]] = False
        new_offsets = np.zeros_like(offsets)
        np.cumsum(lengths - drop, out=new_offsets[1:])
        return flat[keep], new_offsets, truncated
