"""Pooling of token hidden states into one vector per text (right-padded batches)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """``hidden`` [B, T, H] float32, ``mask`` [B, T] of 0/1 with padding on the right."""
    import torch

    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mean":
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(dim=1) / torch.clamp(m.sum(dim=1), min=1e-9)
    if pooling == "last":
        last = mask.sum(dim=1).long() - 1
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    raise ValueError(f"unknown pooling {pooling!r}; choose one of cls, mean, last")
