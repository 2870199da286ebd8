"""The reference model run as an engine that right-pads a batch and pools its last position: the diagnosis's model
of a server whose last-token pooling reads position -1 of a right-padded batch (TEI's Qwen3 bug), so every text
shorter than the longest in its batch is pooled at a pad token and its vector depends on the batch.

Each given batch is one forward pass, its texts right-padded with the tokenizer's pad token (the attention mask
zero there), and the hidden state at the batch's last position is the text's vector (then the Dense heads, as the
reference's). The longest text of a batch, and a text alone, get exactly the reference's last-token vector.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .local import LocalEncoder


class RightPaddedLastEncoder(LocalEncoder):
    """:class:`LocalEncoder` whose last-token pooling reads the last position of each right-padded batch."""

    def encode_batches(self, texts: Sequence[str], batches: Sequence[Sequence[int]]) -> np.ndarray:
        """The vector of every text, each batch of rows of ``texts`` one forward pass; rows in no batch stay 0."""
        import torch

        flat, offsets, _ = self._tokenize(list(texts), None)
        out = np.zeros((len(texts), self.info.hidden_size), dtype=np.float32)
        for batch in batches:
            idx = np.asarray(batch, dtype=np.int64)
            if len(idx) == 0:
                continue
            with torch.inference_mode():
                hidden, _, _ = self._padded_forward(flat, offsets, idx, min_width=1)
                vectors = hidden[:, -1]
                if self.heads is not None:
                    vectors = self.heads(vectors)
                out[idx] = vectors.cpu().numpy()
        return out
