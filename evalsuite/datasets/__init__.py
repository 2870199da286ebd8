"""Dataset loading: BEIR layout (plain or compressed files), TREC qrels, Hugging Face datasets saved to disk.

Empty texts: documents are kept by default and encoded as the empty string, as BEIR and MTEB do
(published numbers include them), with a warning that counts them. Empty queries are skipped by
default, with a warning: an empty query carries no information need, so its ranking measures
nothing about the model (every empty query gets the same vector) and only dilutes the mean, and
an empty query text is almost always a broken export rather than intended data. ``keep`` encodes
them like BEIR, ``error`` refuses them with file:line. The policies are part of the identity.
"""

from __future__ import annotations

from pathlib import Path

from ..base.errors import DatasetError, SpecError
from .model import (
    DEFAULT_EMPTY_DOCS,
    DEFAULT_EMPTY_QUERIES,
    EMPTY_POLICIES,
    Dataset,
    DatasetIdentity,
    EmptyPolicy,
    LazyCorpus,
)

__all__ = [
    "DEFAULT_EMPTY_DOCS",
    "DEFAULT_EMPTY_QUERIES",
    "EMPTY_POLICIES",
    "Dataset",
    "DatasetIdentity",
    "EmptyPolicy",
    "LazyCorpus",
    "empty_policy",
    "load_dataset",
]


def empty_policy(value: str, option: str = "empty_docs") -> EmptyPolicy:
    """Validate an empty-text policy name (for option parsers and spec files)."""
    for p in EMPTY_POLICIES:
        if value == p:
            return p
    raise SpecError(f"{option}: {value!r} is not a policy; choose one of {', '.join(EMPTY_POLICIES)}")


def load_dataset(
    path: str | Path,
    split: str = "test",
    qrels: str | Path | None = None,
    *,
    empty_docs: str = DEFAULT_EMPTY_DOCS,
    empty_queries: str = DEFAULT_EMPTY_QUERIES,
    on_disk: bool = False,
    spool_dir: str | Path | None = None,
    index_dir: str | Path | None = None,
) -> Dataset:
    """Load a dataset directory, recognising its layout.

    ``qrels`` optionally names a qrels file (BEIR TSV or TREC, possibly compressed) used instead of
    ``qrels/<split>.tsv``. ``empty_docs`` / ``empty_queries`` are ``keep``, ``skip`` or ``error``.
    ``on_disk`` (a chunked run) leaves the corpus texts on disk and reads them on demand, in chunks
    (:mod:`.ondisk`); a compressed corpus is decompressed once to a spool file in ``spool_dir`` (the
    temporary directory when None); a plain corpus file's index is kept in ``index_dir`` (when given) and
    reused by the next run of the same bytes (:mod:`.corpusindex`). The dataset, its checks and its identity
    are the same either way.
    """
    docs_policy = empty_policy(empty_docs, "empty_docs")
    queries_policy = empty_policy(empty_queries, "empty_queries")
    root = Path(path)
    if not root.exists():
        raise DatasetError(root, "dataset path does not exist; pass --dataset DIR with a BEIR-layout directory")
    if not root.is_dir():
        archive = any(root.name.endswith(s) for s in (".zip", ".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.bz2"))
        what = (
            "extract the archive and pass the extracted directory"
            if archive
            else f"pass the directory that holds it: --dataset {root.parent}"
        )
        raise DatasetError(
            root, f"dataset path must be a directory (BEIR layout or a saved Hugging Face dataset); {what}"
        )
    if not split or any(c in split for c in "/\\") or split.strip() != split:
        raise DatasetError(root, f"split {split!r} is not a split name; pass e.g. --split test")
    if (root / "dataset_dict.json").is_file():
        if qrels is not None:
            raise DatasetError(
                root,
                "--qrels applies to BEIR-layout directories; a saved Hugging Face dataset holds "
                "its qrels as the split named by --split",
            )
        from .hf import load_hf

        return load_hf(root, split, empty_docs=docs_policy, empty_queries=queries_policy, on_disk=on_disk)
    from .beir import load_beir

    return load_beir(
        root,
        split,
        Path(qrels) if qrels else None,
        empty_docs=docs_policy,
        empty_queries=queries_policy,
        on_disk=on_disk,
        spool_dir=Path(spool_dir) if spool_dir is not None else None,
        index_dir=Path(index_dir) if index_dir is not None else None,
    )
