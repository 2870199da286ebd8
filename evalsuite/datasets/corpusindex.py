"""The on-disk index of a corpus file, built once and reused: an Arrow IPC file keyed by the file's sha256.

Indexing a JSON-lines corpus (:func:`~.ondisk.read_corpus_on_disk`) parses and checks every record; what it keeps
is the ids (:class:`~.idindex.IdIndex`: their UTF-8 bytes cut at end offsets, the sorted 64-bit hashes and their
positions), where each record lies in the file (byte offset and length), the empty documents and the metadata
fields. Those are written here once, as the columns of one Arrow IPC file (``id`` a large string column: the
same bytes and offsets the index holds), named by the sha256 of the corpus file's bytes and the empty-document
policy. The next run of the same bytes hashes the file (about 1 s per GiB), finds the file and memory-maps it:
no record is parsed again, and the columns are used in place (zero copy), so the ids cost page cache, not
process memory. The sha256 is of the whole file, so an index is never used for other bytes; a file that
changed between the hash and a read is caught by its size and modification time, as for an index built now.

The file also records the evalsuite version and this format's version (a file of another one is rebuilt, since
the per-record checks may differ) and a BLAKE2b digest of its columns, checked on load: a truncated or damaged
file is rebuilt, never used. A directory that cannot be written only costs the reuse (the index is built in
memory as before). Compressed corpora are not indexed here (their texts are read from a spool that a later
run would have to decompress again anyway).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..base.io import current_umask
from .idindex import IdIndex
from .model import EmptyPolicy

FORMAT = 1
SUBDIR = "corpus-index"
_HASH_BLOCK = 4 << 20


@dataclass(frozen=True)
class CorpusIndex:
    """What indexing a corpus file found: the ids, each record's byte span, the empty documents, the metadata."""

    ids: IdIndex
    starts: np.ndarray  # int64 byte offset of each record (file order)
    lengths: np.ndarray  # int32 (int64 past 2 GiB) byte length of each record
    empty: dict[str, str]  # id -> where ("line 3 ('d3')")
    fields: dict[str, dict[str, str]]  # id -> metadata fields (records without any absent)


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_HASH_BLOCK):
            h.update(block)
    return h.hexdigest()


def index_path(index_dir: Path, sha256: str, policy: EmptyPolicy) -> Path:
    return Path(index_dir) / sha256[:2] / f"{sha256}-{policy}.arrow"


def _digest(arrays: list[np.ndarray], blob: Any) -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        h.update(np.ascontiguousarray(a).view(np.uint8).data)
    h.update(memoryview(blob).cast("B"))
    return h.hexdigest()


def save(path: Path, index: CorpusIndex) -> bool:
    """Write ``index`` to ``path`` atomically (a reader sees the whole file or none); False when it cannot be
    written (a read-only or full cache directory only costs the reuse)."""
    import pyarrow as pa

    ids = index.ids
    offsets = np.concatenate([np.zeros(1, np.int64), np.asarray(ids.ends, np.int64)])
    columns = [offsets, ids.hashes, ids.order, index.starts, index.lengths]
    meta = {
        "format": str(FORMAT),
        "evalsuite": __version__,
        "digest": _digest(columns, ids.blob),
        "empty": json.dumps(index.empty, ensure_ascii=False),
        "fields": json.dumps(index.fields, ensure_ascii=False),
    }
    n = len(ids)
    table = pa.table(
        {
            "id": pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(ids.blob)),
            "hash": pa.array(ids.hashes),
            "order": pa.array(ids.order),
            "start": pa.array(index.starts),
            "length": pa.array(index.lengths),
        }
    ).replace_schema_metadata(meta)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as fh:
            with pa.ipc.new_file(fh, table.schema) as writer:
                writer.write_table(table)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False
    return True


def load(path: Path) -> CorpusIndex | None:
    """The index written at ``path``, its columns memory-mapped; None when there is none, or it is of another
    format or evalsuite version, or damaged (its digest differs): the caller indexes the file again."""
    import pyarrow as pa

    try:
        source = pa.memory_map(str(path), "r")
    except OSError:
        return None
    try:
        reader = pa.ipc.open_file(source)
        meta = {k.decode(): v.decode() for k, v in (reader.schema.metadata or {}).items()}
        if meta.get("format") != str(FORMAT) or meta.get("evalsuite") != __version__:
            return None
        table = reader.read_all()
        if table.column("id").num_chunks != 1 or table.num_columns != 5:
            return None
        id_col = table.column("id").chunk(0)
        n = len(id_col)
        offsets = _view(id_col.buffers()[1], np.int64, id_col.offset, n + 1)
        blob = memoryview(id_col.buffers()[2]).cast("B") if id_col.buffers()[2] is not None else memoryview(b"")
        hashes, order, starts, lengths = (_column(table, name) for name in ("hash", "order", "start", "length"))
        if offsets[0] != 0 or _digest([offsets, hashes, order, starts, lengths], blob) != meta.get("digest"):
            return None
        empty = json.loads(meta["empty"])
        fields = json.loads(meta["fields"])
    except (pa.ArrowException, OSError, KeyError, ValueError, IndexError):
        return None
    ids = IdIndex(blob[: int(offsets[-1])], offsets[1:], hashes, order)
    return CorpusIndex(ids, starts, lengths, empty, fields)


def _view(buffer: Any, dtype: Any, offset: int, count: int) -> np.ndarray:
    """``count`` values of ``dtype`` from an Arrow buffer, in place (read-only)."""
    return np.frombuffer(buffer, dtype=dtype, count=count, offset=offset * np.dtype(dtype).itemsize)


def _column(table: Any, name: str) -> np.ndarray:
    chunks = table.column(name).chunks
    if len(chunks) != 1 or chunks[0].null_count:
        raise ValueError(f"column {name}")
    out: np.ndarray = chunks[0].to_numpy(zero_copy_only=True)
    return out
