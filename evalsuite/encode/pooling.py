"""Pooling of token hidden states into one vector per text (right-padded batches), as sentence-transformers'
``Pooling`` module computes each mode (its names: cls, mean, lasttoken, max, weightedmean,
mean_sqrt_len_tokens; here cls, mean, last, max, weightedmean, mean_sqrt_len)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

NAMES = ("cls", "mean", "last", "max", "weightedmean", "mean_sqrt_len")


def exclude_prompt(mask: torch.Tensor, prompt_tokens: torch.Tensor) -> torch.Tensor:
    """``mask`` with each row's first ``prompt_tokens[row]`` tokens set to 0 (``include_prompt: false``)."""
    import torch

    positions = torch.arange(mask.shape[1], device=mask.device).unsqueeze(0)
    return mask * (positions >= prompt_tokens.to(mask.device).unsqueeze(1)).to(mask.dtype)


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: str, pool_mask: torch.Tensor | None = None) -> torch.Tensor:
    """``hidden`` [B, T, H] float32, ``mask`` [B, T] of 0/1 with padding on the right; ``pool_mask`` the tokens
    pooled when it differs from ``mask`` (prompt tokens left out). ``last`` is the last real token (the EOS a
    decoder's tokenizer appends), ``weightedmean`` weighs token ``t`` by ``t + 1``."""
    import torch

    m_int = mask if pool_mask is None else pool_mask
    m = m_int.unsqueeze(-1).to(hidden.dtype)
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    if pooling == "cls":
        return hidden[rows, m_int.to(torch.int32).argmax(dim=1)]  # the first pooled token: 0 unless prompt-excluded
    if pooling in ("mean", "mean_sqrt_len"):
        count = torch.clamp(m.sum(dim=1), min=1e-9)
        return (hidden * m).sum(dim=1) / (count if pooling == "mean" else torch.sqrt(count))
    if pooling == "last":
        last = mask.sum(dim=1).long() - 1
        return hidden[rows, last] * m[rows, last]
    if pooling == "max":
        return hidden.masked_fill(m == 0, float("-inf")).max(dim=1).values
    if pooling == "weightedmean":
        weights = m * torch.arange(1, hidden.shape[1] + 1, device=hidden.device, dtype=hidden.dtype).view(1, -1, 1)
        return (hidden * weights).sum(dim=1) / torch.clamp(weights.sum(dim=1), min=1e-9)
    raise ValueError(f"unknown pooling {pooling!r}; choose one of {', '.join(NAMES)}")
