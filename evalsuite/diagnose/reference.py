"""Where a diagnosis gets the reference's vectors under each alternative (:class:`~.local.ReferenceSource`), made
from the pinned model: the canary's diagnosis and the index audit's build it the same way."""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import TYPE_CHECKING

from .local import ReferenceSource

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..contract import Contract
    from ..encode.base import Encoder
    from ..encode.right_padded import RightPaddedLastEncoder
    from ..model import ModelInfo


def reference_source(
    contract: Contract,
    model: ModelInfo,
    device: str,
    reference: Callable[[], Encoder],
    build: Callable[[str, int], Encoder],
    hidden: int,
    *,
    token_counts: Callable[[list[str]], list[int] | None] = lambda texts: None,
) -> ReferenceSource:
    """Where the diagnosis gets the reference's vectors under each alternative: the pinned ``reference`` encoder
    at the contract's length and dtype (another one for another length or dtype), a suspect model directory of the
    same width, the input without its closing special token (``special``), the batches right-padded and pooled at
    their last position (``right_padded``); each made once. ``build(dtype, max_length)`` makes the reference
    encoder at another length or dtype (the run's encoder factory). The canary's and the index audit's diagnoses
    share it."""
    c = contract

    @cache
    def encoder(max_length: int, dtype: str) -> Encoder:
        if (max_length, dtype) == (c.max_length, c.dtype):
            return reference()
        return build(dtype, max_length)

    @cache
    def suspect(path: str) -> Encoder:
        from ..encode.local import LocalEncoder
        from ..model import resolve_model

        info = resolve_model(path)
        if info.hidden_size != hidden:
            raise ValueError(f"{path} has {info.hidden_size} dimensions, the reference {hidden}")
        return LocalEncoder(
            info,
            dtype=c.dtype,
            device=device,
            max_length=c.max_length,
            truncation="truncate",
            progress=False,
        )

    @cache
    def special(mode: str, max_length: int, dtype: str) -> Encoder | None:
        from ..encode.closing_token import ClosingTokenEncoder

        enc = ClosingTokenEncoder(
            model,
            mode=mode,
            dtype=dtype,
            device=device,
            max_length=max_length,
            truncation="truncate",
            progress=False,
        )
        return enc if enc.closing_id is not None else None

    @cache
    def right_padded(max_length: int, dtype: str) -> RightPaddedLastEncoder | None:
        from ..encode.right_padded import RightPaddedLastEncoder

        return RightPaddedLastEncoder(
            model,
            dtype=dtype,
            device=device,
            max_length=max_length,
            truncation="truncate",
            progress=False,
        )

    @cache
    def headless(mode: str, max_length: int, dtype: str) -> Encoder | None:
        """The reference with its Dense heads dropped (``dropped``) or run without activations (``no_activation``)."""
        info = model
        if not info.dense:
            return None
        from ..encode.local import LocalEncoder

        if mode == "dropped":  # the pooled transformer output: the first head's input width
            info = dataclasses.replace(info, dense=(), hidden_size=info.dense[0].in_features)
        else:
            info = dataclasses.replace(
                info, dense=tuple(dataclasses.replace(h, activation="Identity") for h in info.dense)
            )
        enc = LocalEncoder(
            info, dtype=dtype, device=device, max_length=max_length, truncation="truncate", progress=False
        )
        return enc

    return ReferenceSource(
        encoder=encoder,
        suspect=suspect,
        token_counts=token_counts,
        special=special,
        right_padded=right_padded,
        headless=headless,
    )
