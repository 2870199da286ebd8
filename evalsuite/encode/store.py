"""A run's vectors on disk: one ``.npy`` file per (role, pooling), memory-mapped, written chunk by chunk.

The vectors of a large corpus need disk, not RAM: the chunked encode writes each chunk's rows into
the file and drops them, and the block-wise search reads the file one block at a time. Rows are the
documents in corpus order (row ``i`` is ``doc_ids[i]``); they are pooled, full-dimension float32
vectors, so one store serves every Matryoshka dimension and normalization.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..base.errors import StoreError


def _fail(path: Path, exc: OSError, doing: str) -> StoreError:
    return StoreError(
        f"cannot {doing} the vector store {path} ({exc.strerror or exc}); free disk space or make "
        "the directory writable, or pass another --store-dir"
    )


@dataclass(frozen=True)
class VectorStore:
    """A (rows, dim) float32 matrix in an ``.npy`` file, opened as a memory map."""

    path: Path
    rows: int
    dim: int

    @classmethod
    def create(cls, path: str | Path, rows: int, dim: int) -> VectorStore:
        """A new zero-filled store of ``rows`` x ``dim`` (the file is sparse until written)."""
        target = Path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            mm = np.lib.format.open_memmap(target, mode="w+", dtype=np.float32, shape=(rows, dim))
            del mm
        except OSError as exc:
            raise _fail(target, exc, "create") from exc
        return cls(target, rows, dim)

    @classmethod
    def open(cls, path: str | Path) -> VectorStore:
        target = Path(path)
        try:
            mm = np.load(target, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read the vector store {target} ({exc}); delete it and re-run") from exc
        if mm.dtype != np.float32 or mm.ndim != 2:
            raise StoreError(f"{target} is not a vector store (dtype {mm.dtype}, {mm.ndim} dims); delete it")
        return cls(target, int(mm.shape[0]), int(mm.shape[1]))

    def write(self, start: int, vectors: np.ndarray) -> None:
        """Write rows ``start .. start + len(vectors)`` and flush them to the file."""
        if vectors.ndim != 2 or vectors.shape[1] != self.dim or start < 0 or start + len(vectors) > self.rows:
            raise StoreError(
                f"{self.path}: cannot write {vectors.shape} at row {start} into a store of {self.rows} x {self.dim}"
            )
        try:
            mm = np.load(self.path, mmap_mode="r+")
            mm[start : start + len(vectors)] = vectors
            mm.flush()
            del mm
        except OSError as exc:
            raise _fail(self.path, exc, "write") from exc

    def read_block(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start .. stop`` read from the file into memory (no mapping stays resident afterwards)."""
        try:
            mapped = np.load(self.path, mmap_mode="r")
            offset = int(mapped.offset)  # the .npy header's length
            del mapped
            block = np.fromfile(
                self.path, dtype="<f4", count=(stop - start) * self.dim, offset=offset + start * self.dim * 4
            )
        except ValueError as exc:
            raise StoreError(
                f"{self.path} is shorter than its header says or not a vector store ({exc}); delete it and re-run"
            ) from exc
        except OSError as exc:
            raise _fail(self.path, exc, "read") from exc
        if block.size != (stop - start) * self.dim:
            raise StoreError(f"{self.path} is shorter than its header says (truncated?); delete it and re-run")
        return block.reshape(stop - start, self.dim)

    def read(self) -> np.ndarray:
        """The whole store as a read-only memory map (pages are read on access, not now)."""
        vectors: np.ndarray = np.load(self.path, mmap_mode="r")
        return vectors

    def blocks(self, block_rows: int) -> list[tuple[int, int]]:
        """``(start, stop)`` row ranges of at most ``block_rows`` rows covering the store."""
        if block_rows < 1:
            raise StoreError(f"block size {block_rows} must be >= 1")
        return [(s, min(s + block_rows, self.rows)) for s in range(0, self.rows, block_rows)]
