"""Dataset loading: BEIR layout, TREC qrels, Hugging Face datasets saved to disk."""

from __future__ import annotations

from pathlib import Path

from ..errors import DatasetError
from .model import Dataset, DatasetIdentity

__all__ = ["Dataset", "DatasetIdentity", "load_dataset"]


def load_dataset(path: str | Path, split: str = "test", qrels: str | Path | None = None) -> Dataset:
    """Load a dataset directory, recognising its layout.

    ``qrels`` optionally names a qrels file (BEIR TSV or TREC) used instead of
    ``qrels/<split>.tsv``.
    """
    root = Path(path)
    if not root.exists():
        raise DatasetError(root, "dataset path does not exist; pass --dataset DIR with a BEIR-layout directory")
    if not root.is_dir():
        raise DatasetError(root, "dataset path must be a directory (BEIR layout or a saved Hugging Face dataset)")
    if (root / "dataset_dict.json").is_file():
        from .hf import load_hf

        return load_hf(root, split)
    from .beir import load_beir

    return load_beir(root, split, Path(qrels) if qrels else None)
