"""Chunked encoding into memory-mapped stores: one chunk's texts, tokens and vectors held at a time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..contract import Contract
from .base import Encoder
from .store import VectorStore


def encode_to_store(
    encoder: Encoder,
    contract: Contract,
    texts: Callable[[Sequence[str]], list[str]],
    ids: Sequence[str],
    store_dir: Path,
    *,
    chunk_size: int,
    poolings: Sequence[str],
    role: str = "document",
    dim: int,
) -> dict[str, VectorStore]:
    """Encode ``ids`` (their texts fetched by ``texts`` chunk by chunk) ``chunk_size`` at a time into one
    memory-mapped store per pooling; only one chunk's texts, tokens and vectors are held at once."""
    stores = {p: VectorStore.create(store_dir / f"{role}-{p}.npy", len(ids), dim) for p in poolings}
    for start in range(0, len(ids), chunk_size):
        chunk = list(ids[start : start + chunk_size])
        vectors = encoder.encode(contract.render_all(role, texts(chunk)), poolings=poolings, ids=chunk, role=role)
        for p in poolings:
            stores[p].write(start, vectors[p])
    return stores
