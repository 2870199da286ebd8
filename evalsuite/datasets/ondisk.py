"""A BEIR corpus that stays on disk: the bounded-memory reader of a chunked run (``--chunk-size``).

Reading ``corpus.jsonl`` indexes it once, through the same per-record checks as the in-memory
reader (:func:`~evalsuite.datasets.records.documents`: ids, duplicates, empty-document policy, BOM,
CRLF, metadata fields, the file's sha256), but keeps only each document's id (compactly,
:mod:`.idindex`) and where its record lies in the file: a byte offset and a length. A text is read
again when asked for: one at a time (``corpus[doc_id]``, for the few documents a reranker, a slice or
a report needs) or sequentially, a chunk of documents at a time in file order
(:meth:`OnDiskCorpus.iter_chunks`, for the chunked encoder). Peak memory is the ids and offsets
(32 bytes a document beside its id's bytes; 58 bytes of RSS measured with ids like ``d123456``)
plus one chunk of texts, whatever the corpus size.

A compressed corpus (``.gz``, ``.bz2``, ``.xz``) is decompressed once, while it is indexed, into a
spool file (in ``--store-dir`` when given, else the temporary directory), which the offsets then
index; the spool is deleted when the corpus is no longer used (at exit at the latest). The file read
is checked before every read: if its size or modification time changed since it was indexed, the
offsets no longer hold and the read fails with :class:`~evalsuite.base.errors.DatasetChanged`.
"""

from __future__ import annotations

import json
import os
import weakref
from array import array
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import DatasetChanged, DatasetError
from .assemble import Texts
from .files import TextFile, compression
from .idindex import IdBuilder, IdIndex
from .model import EmptyPolicy
from .records import NO_DOCUMENTS, document_text, documents, duplicate_id
from .spool import Spool

_READ_BYTES = 16 << 20  # the most bytes one read of consecutive records takes


def file_signature(path: Path) -> tuple[int, int]:
    """A file's size and modification time: what must not change while its byte offsets are used."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


class IndexedCorpus(Mapping[str, str]):
    """Documents by id in source order whose texts stay in their source: the ids are held compactly
    (:class:`~.idindex.IdIndex`), a text is read when asked for. A read-only mapping: ``corpus[doc_id]``
    reads one document; iterating gives the ids (from memory, no read); :meth:`iter_chunks` reads the
    texts sequentially, a chunk at a time. Subclasses say how to read positions and how to filter."""

    def __init__(self, ids: IdIndex) -> None:
        self._ids = ids

    def _read(self, start: int, stop: int) -> list[str]:
        """The texts at positions ``start .. stop`` (file order)."""
        raise NotImplementedError

    def _subset(self, keep: np.ndarray) -> IndexedCorpus:
        """The corpus of the positions where ``keep`` is true."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def id_sequence(self) -> IdIndex:
        """The ids in file order as a compact sequence (:attr:`Dataset.doc_ids <..model.Dataset.doc_ids>`)."""
        return self._ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._ids.find(key) >= 0

    def __getitem__(self, key: str) -> str:
        pos = self._ids.find(key) if isinstance(key, str) else -1
        if pos < 0:
            raise KeyError(key)
        return self._read(pos, pos + 1)[0]

    def iter_chunks(self, size: int) -> Iterator[tuple[list[str], list[str]]]:
        """``(ids, texts)`` of ``size`` documents at a time, in file order, each chunk read sequentially."""
        if size < 1:
            raise ValueError(f"chunk size {size} must be >= 1")
        for start in range(0, len(self), size):
            stop = min(start + size, len(self))
            yield self._ids.ids(start, stop), self._read(start, stop)

    def texts(self, ids: Collection[str]) -> list[str]:
        """The texts of ``ids`` (each must be in the corpus), read in file order and returned in the given order."""
        positions = self._ids.find_all(ids)
        missing = [i for i, p in zip(ids, positions, strict=True) if p < 0]
        if missing:
            raise KeyError(missing[0])
        got = {p: self._read(p, p + 1)[0] for p in sorted(set(positions))}
        return [got[p] for p in positions]

    def without(self, ids: Collection[str]) -> IndexedCorpus:
        """The same corpus less the documents ``ids`` (an empty-document policy that skips them)."""
        keep = np.ones(len(self), dtype=bool)
        for pos in self._ids.find_all(ids):
            if pos >= 0:
                keep[pos] = False
        return self._subset(keep)


class OnDiskCorpus(IndexedCorpus):
    """A JSON-lines corpus read from its file (or its spool) by byte offset (see the module docstring)."""

    def __init__(
        self,
        *,
        source: Path,
        file: Path,
        ids: IdIndex,
        starts: np.ndarray,
        lengths: np.ndarray,
        signature: tuple[int, int],
        spool: Spool | None = None,
    ) -> None:
        super().__init__(ids)
        self.source = source  # the corpus file as named (messages name it)
        self.file = file  # the file the offsets index: the corpus itself, or its spool when compressed
        self._starts = starts
        self._lengths = lengths
        self._signature = signature
        self._spool = spool
        self._fd: int | None = None
        self._close: weakref.finalize[Any, Any] | None = None

    def __repr__(self) -> str:
        return f"OnDiskCorpus({self.source}, {len(self)} documents)"

    def _subset(self, keep: np.ndarray) -> OnDiskCorpus:
        return OnDiskCorpus(
            source=self.source,
            file=self.file,
            ids=self._ids.subset(keep),
            starts=self._starts[keep],
            lengths=self._lengths[keep],
            signature=self._signature,
            spool=self._spool,
        )

    # -- reading the file ----------------------------------------------------------------------------
    def _changed(self, what: str) -> DatasetChanged:
        copy = f" (its decompressed copy {self.file})" if self.file != self.source else ""
        return DatasetChanged(
            self.source,
            f"the corpus file{copy} {what} since it was indexed, so the byte offsets read at the start "
            "no longer hold; re-run the evaluation (and leave the dataset unchanged while it runs)",
        )

    def _open(self) -> int:
        try:
            signature = file_signature(self.file)
        except OSError:
            raise self._changed("is gone") from None
        if signature != self._signature:
            raise self._changed(
                f"changed (size {self._signature[0]} -> {signature[0]} bytes, "
                f"modified {'at another time' if signature[1] != self._signature[1] else 'at the same time'})"
            )
        if self._fd is None:
            try:
                fd = os.open(self.file, os.O_RDONLY)
            except OSError as exc:
                raise DatasetError(
                    self.file, f"cannot be read ({exc.strerror or exc}); check its permissions"
                ) from None
            self._fd = fd
            self._close = weakref.finalize(self, os.close, fd)
        return self._fd

    def _read(self, start: int, stop: int) -> list[str]:
        """The texts at positions ``start .. stop``, read in runs of consecutive records."""
        fd = self._open()
        starts = self._starts[start:stop].tolist()
        lengths = self._lengths[start:stop].tolist()
        out: list[str] = []
        i = 0
        while i < len(starts):
            base = starts[i]
            j = i + 1
            while j < len(starts) and starts[j] + lengths[j] - base <= _READ_BYTES:
                j += 1
            size = starts[j - 1] + lengths[j - 1] - base
            try:
                buf = os.pread(fd, size, base)
            except OSError as exc:
                raise DatasetError(self.file, f"cannot be read ({exc.strerror or exc})") from None
            if len(buf) != size:
                raise self._changed("is shorter")
            out.extend(
                self._parse(buf[s - base : s - base + n]) for s, n in zip(starts[i:j], lengths[i:j], strict=True)
            )
            i = j
        return out

    def _parse(self, raw: bytes) -> str:
        try:
            obj = json.loads(raw.decode("utf-8"), strict=False)
            if not isinstance(obj, dict):
                raise ValueError("not an object")
            return document_text(self.source, None, obj)
        except (ValueError, DatasetError):
            raise self._changed("holds other records") from None

    # -- pickling (a shared session result travels to other processes) --------------------------------
    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state.update(_fd=None, _close=None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)


def read_corpus_on_disk(
    source: TextFile, policy: EmptyPolicy = "keep", spool_dir: Path | None = None, index_dir: Path | None = None
) -> Texts:
    """:func:`~evalsuite.datasets.beir.read_corpus` with the texts left on disk: the same checks, errors
    (the first one in the file, as the in-memory reader raises it), empty documents, metadata fields and
    sha256, with an :class:`OnDiskCorpus` as the texts. A compressed file is spooled to ``spool_dir``.
    ``index_dir``: where the index of a plain file is kept between runs (:mod:`.corpusindex`): a file whose
    bytes were indexed before is hashed, not parsed again."""
    path = source.path
    compressed = compression(path)
    if index_dir is not None and not compressed:
        return _reuse(source, policy, index_dir)
    spool = Spool.create(spool_dir, path) if compressed else None
    try:
        return _index(source, policy, spool)
    except BaseException:
        if spool is not None:
            spool.discard()
        raise


def _reuse(source: TextFile, policy: EmptyPolicy, index_dir: Path) -> Texts:
    """The corpus from the index of the same bytes kept in ``index_dir``; indexed (and kept) when there is none."""
    from . import corpusindex

    path = source.path
    before = file_signature(path)
    digest = corpusindex.file_sha256(path)
    if file_signature(path) != before:
        raise DatasetChanged(path, "the corpus file changed while it was read; re-run the evaluation")
    found = corpusindex.load(corpusindex.index_path(index_dir, digest, policy))
    if found is None:
        texts = _index(source, policy, None)
        corpus = texts.texts
        if isinstance(corpus, OnDiskCorpus):
            index = corpusindex.CorpusIndex(
                corpus.id_sequence, corpus._starts, corpus._lengths, texts.empty, texts.fields
            )
            corpusindex.save(corpusindex.index_path(index_dir, source.sha256, policy), index)
        return texts
    source.sha256 = digest
    corpus = OnDiskCorpus(
        source=path,
        file=path,
        ids=found.ids,
        starts=found.starts,
        lengths=found.lengths,
        signature=before,
    )
    return Texts(str(path), corpus, found.empty, found.fields)


def collect(
    rows: Iterator[tuple[int, str, str, dict[str, str] | None]],
    ids: IdBuilder,
    refuse: Callable[[IdIndex, int, int], DatasetError],
    where: str = "line",
) -> tuple[IdIndex, dict[str, str], dict[str, dict[str, str]]]:
    """Run a reader's checked records (``(line, id, text, metadata)``; each id added to ``ids`` as it is
    seen) and index them: the empty documents and the metadata fields by id. A repeated id is refused
    with ``refuse(index, first, second)`` (positions), also when a later record fails first: the
    in-memory reader, which refuses a repeated id on sight, would have stopped there."""
    empty: dict[str, str] = {}
    fields: dict[str, dict[str, str]] = {}

    def check(index: IdIndex) -> IdIndex:
        pair = index.first_duplicate()
        if pair is not None:
            raise refuse(index, *pair)
        return index

    try:
        for ln, did, text, meta in rows:
            if not text:
                empty[did] = f"{where} {ln} ({did!r})"
            if meta:
                fields[did] = meta
    except DatasetError:
        check(ids.build())
        raise
    return check(ids.build()), empty, fields


def _index(source: TextFile, policy: EmptyPolicy, spool: Spool | None) -> Texts:
    path = source.path
    before = None if spool is not None else file_signature(path)
    ids = IdBuilder()
    starts, lengths = array("q"), array("q")

    def seen(did: str, ln: int) -> None:  # duplicates are found once every id is known (or at an error)
        ids.add(did)
        starts.append(source.span[0])
        lengths.append(source.span[1])

    def refuse(index: IdIndex, first: int, second: int) -> DatasetError:
        if spool is not None:
            spool.close()
        lines = _lines_at(spool.path if spool is not None else path, [starts[first], starts[second]])
        return duplicate_id(path, lines[1], index.id_at(second), lines[0], "document")

    source.tee = spool
    try:
        index, empty, fields = collect(documents(source, policy, seen), ids, refuse)
    finally:
        source.tee = None
    if not len(index):
        raise DatasetError(path, NO_DOCUMENTS)
    if spool is not None:
        spool.close()
    file = spool.path if spool is not None else path
    signature = file_signature(file)
    if before is not None and before != signature:
        raise DatasetChanged(path, "the corpus file changed while it was read; re-run the evaluation")
    corpus = OnDiskCorpus(
        source=path,
        file=file,
        ids=index,
        starts=np.frombuffer(starts, dtype=np.int64) if starts else np.zeros(0, np.int64),
        lengths=_narrow(np.frombuffer(lengths, dtype=np.int64) if lengths else np.zeros(0, np.int64)),
        signature=signature,
        spool=spool,
    )
    return Texts(str(path), corpus, empty, fields)


def _narrow(lengths: np.ndarray) -> np.ndarray:
    """Record lengths as int32 (4 bytes a document) unless a record is 2 GiB or longer."""
    return lengths.astype(np.int32) if not len(lengths) or int(lengths.max()) < 2**31 else lengths.copy()


def _lines_at(file: Path, offsets: list[int]) -> list[int]:
    """The line number (from 1) of each byte offset of ``file`` (an error message's file:line)."""
    out = []
    with open(file, "rb") as fh:
        for offset in offsets:
            fh.seek(0)
            newlines, left = 0, offset
            while left > 0:
                block = fh.read(min(left, 1 << 20))
                if not block:
                    break
                newlines += block.count(b"\n")
                left -= len(block)
            out.append(newlines + 1)
    return out
