"""Chunked encoding into memory-mapped stores: one chunk's texts, tokens and vectors held at a time."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from ..base.errors import StoreError
from ..contract import Contract
from .base import Encoder
from .store import VectorStore


def encode_to_store(
    encoder: Encoder,
    contract: Contract,
    chunks: Iterable[tuple[Sequence[str], Sequence[str]]],
    rows: int,
    store_dir: Path,
    *,
    poolings: Sequence[str],
    role: str = "document",
    dim: int,
) -> dict[str, VectorStore]:
    """Encode ``chunks`` (``(ids, texts)`` in corpus order, e.g. :meth:`Dataset.corpus_chunks`, which
    reads a corpus on disk chunk by chunk) into one memory-mapped store of ``rows`` rows per pooling;
    only one chunk's texts, tokens and vectors are held at once (the encoder sorts by length within it)."""
    stores = {p: VectorStore.create(store_dir / f"{role}-{p}.npy", rows, dim) for p in poolings}
    start = 0
    for ids, texts in chunks:
        if len(ids) != len(texts) or start + len(ids) > rows:
            raise StoreError(
                f"chunked encode: a chunk of {len(ids)} ids and {len(texts)} texts at row {start} does not fit "
                f"the {rows} rows of the store"
            )
        vectors = encoder.encode(contract.render_all(role, texts), poolings=poolings, ids=list(ids), role=role)
        for p in poolings:
            stores[p].write(start, vectors[p])
        start += len(ids)
    if start != rows:
        raise StoreError(f"chunked encode: {start} {role}s were encoded for a store of {rows} rows")
    return stores
