"""The slice index of a prepared run: its dataset under its contract, counted with its model's tokenizer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..slicing.index import SliceIndex, build_slice_index

if TYPE_CHECKING:
    from ..contract import Contract
    from .prepared import Prepared


def slice_index(prepared: Prepared, contract: Contract | None = None) -> SliceIndex:
    """Membership of every slice for ``prepared`` (under ``contract``, default its own); no model is loaded."""
    return build_slice_index(
        prepared.dataset, contract or prepared.contract, prepared.model.tokenizer_path, prepared.spec.slice_by
    )
