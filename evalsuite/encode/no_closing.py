"""The reference encoder without the closing special token: the diagnosis's model of a server whose tokenizer
lost it (a GGUF converted with ``tokenizer.ggml.add_sep_token`` / ``add_eos_token`` false, issue 31).

The text is tokenized by the reference tokenizer one token longer, then its closing special token ([SEP] for
BERT, EOS for decoders that add one) is dropped: an over-long text keeps exactly the tokens a server that cuts
at ``max_length`` without the closing token keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .local import LocalEncoder


def closing_token_id(tokenizer: Any) -> int | None:
    """The special token the tokenizer puts after every text, or None when it adds none."""
    ids = tokenizer("a")["input_ids"]
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    if len(ids) <= len(plain) or ids[-len(plain) :] == plain:
        return None  # nothing follows the text
    last = int(ids[-1])
    return last if last in set(tokenizer.all_special_ids) else None


class NoClosingTokenEncoder(LocalEncoder):
    """:class:`LocalEncoder` whose inputs lack the closing special token (``closing_id``: None when the
    tokenizer adds none, and then it encodes as the reference does)."""

    def __init__(self, *args: Any, max_length: int, **kwargs: Any) -> None:
        super().__init__(*args, max_length=max_length, **kwargs)
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
        keep = np.ones(len(flat), dtype=bool)
        keep[last[drop]] = False
        new_offsets = np.zeros_like(offsets)
        np.cumsum(lengths - drop, out=new_offsets[1:])
        return flat[keep], new_offsets, truncated
