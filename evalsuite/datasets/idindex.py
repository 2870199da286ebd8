"""Document ids held compactly and found by hash: the id side of a corpus that stays on disk.

A dict of millions of ids costs about a hundred bytes per id (the str, the int, the hash slot). Here
the ids are one UTF-8 blob in file order with an end offset each (8 bytes), plus a 64-bit hash per
id sorted once (8 bytes) and each hash's position in file order (4 bytes under 2**31 ids): about 20
bytes per id beside its own bytes. A lookup hashes the id, finds the hash by binary search and
compares the stored bytes (so a hash collision can never return the wrong document). The hash is
BLAKE2b, not Python's ``hash()``: an index pickled to another process finds the same ids there.

The index is itself a sized, indexable sequence of the ids in file order (``ids[pos]`` decodes one id
on demand), so a chunked run passes it where a list of ids was passed, without ever holding the ids
as Python strings; :func:`code_point_ranks` orders the ids from the blob with numpy (UTF-8 byte order
is code-point order), without a Python string per id.
"""

from __future__ import annotations

import hashlib
import operator
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

_ITER_BATCH = 65_536  # ids decoded per step when iterating (bounds the temporary list of offsets)


def id_hash(data: bytes) -> int:
    """A 64-bit hash of an id's UTF-8 bytes, the same in every process."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def _encode(ident: str) -> bytes:
    # ids were checked encodable when read; a lookup of an unencodable string simply finds nothing
    return ident.encode("utf-8", "surrogatepass")


class IdBuilder:
    """Collects ids in file order; :meth:`build` makes the :class:`IdIndex`."""

    def __init__(self) -> None:
        self._blob = bytearray()
        self._ends = array("q")
        self._hashes = array("Q")

    def __len__(self) -> int:
        return len(self._ends)

    def add(self, ident: str) -> None:
        data = _encode(ident)
        self._blob += data
        self._ends.append(len(self._blob))
        self._hashes.append(id_hash(data))

    def build(self) -> IdIndex:
        hashes = np.frombuffer(self._hashes, dtype=np.uint64) if self._hashes else np.zeros(0, np.uint64)
        order = np.argsort(hashes, kind="stable")
        order = order.astype(np.int32 if len(order) < 2**31 else np.int64)
        ends = np.frombuffer(self._ends, dtype=np.int64).copy() if self._ends else np.zeros(0, np.int64)
        return IdIndex(bytes(self._blob), ends, hashes[order], order)


@dataclass(frozen=True, eq=False)
class IdIndex(Sequence[str]):
    """Ids in file order (``blob`` cut at ``ends``), with ``hashes`` sorted and ``order`` their positions.

    A read-only sequence of the ids: ``index[pos]`` decodes one id, a slice decodes a list; ``in`` and
    :meth:`index` find an id by hash, never by scanning."""

    blob: bytes | memoryview  # a memoryview (format "B") over a memory-mapped file (:mod:`.corpusindex`)
    ends: np.ndarray
    hashes: np.ndarray
    order: np.ndarray

    def __len__(self) -> int:
        return len(self.ends)

    def __reduce__(self) -> tuple[object, ...]:
        # a memory-mapped index travels as its bytes (a memoryview cannot be pickled)
        return (type(self), (bytes(self.blob), self.ends, self.hashes, self.order))

    def _bytes(self, pos: int) -> bytes:
        return bytes(self.blob[int(self.ends[pos - 1]) if pos else 0 : int(self.ends[pos])])

    def id_at(self, pos: int) -> str:
        return self._bytes(pos).decode("utf-8")

    @overload
    def __getitem__(self, pos: int) -> str: ...

    @overload
    def __getitem__(self, pos: slice) -> list[str]: ...

    def __getitem__(self, pos: int | slice) -> str | list[str]:
        n = len(self)
        if isinstance(pos, slice):
            start, stop, step = pos.indices(n)
            return self.ids(start, stop) if step == 1 else [self.id_at(i) for i in range(start, stop, step)]
        i = operator.index(pos)
        if not -n <= i < n:
            raise IndexError(f"id position {i} out of range for {n} ids")
        return self.id_at(i + n if i < 0 else i)

    def __contains__(self, ident: object) -> bool:
        return isinstance(ident, str) and self.find(ident) >= 0

    def index(self, ident: object, start: int = 0, stop: int = sys.maxsize) -> int:
        pos = self.find(ident) if isinstance(ident, str) else -1
        if pos < 0 or not start <= pos < stop:
            raise ValueError(f"{ident!r} is not among the ids")
        return pos

    def code_point_ranks(self) -> np.ndarray:
        """Each id's place among all the ids in ascending code-point order (see :func:`code_point_ranks`)."""
        return _byte_ranks(np.frombuffer(self.blob, np.uint8), self.ends)

    def ids(self, start: int = 0, stop: int | None = None) -> list[str]:
        """The ids at positions ``start .. stop`` (file order)."""
        stop = len(self) if stop is None else min(stop, len(self))
        if stop <= start:
            return []
        blob = self.blob
        begin = int(self.ends[start - 1]) if start else 0
        out = []
        for end in self.ends[start:stop].tolist():
            out.append(str(blob[begin:end], "utf-8"))
            begin = end
        return out

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self), _ITER_BATCH):
            yield from self.ids(start, start + _ITER_BATCH)

    def find(self, ident: str) -> int:
        """The position of ``ident`` in file order, or -1."""
        data = _encode(ident)
        h = np.uint64(id_hash(data))
        i = int(np.searchsorted(self.hashes, h))
        while i < len(self.hashes) and self.hashes[i] == h:
            pos = int(self.order[i])
            if self._bytes(pos) == data:
                return pos
            i += 1
        return -1

    def find_all(self, idents: Iterable[str]) -> list[int]:
        """:meth:`find` for each of ``idents``."""
        return [self.find(i) for i in idents]

    def first_duplicate(self) -> tuple[int, int] | None:
        """``(first, second)`` positions of the id whose second occurrence comes first in the file, if any
        id occurs twice: the pair a reader that refuses a repeated id on sight would have refused."""
        same = np.flatnonzero(self.hashes[1:] == self.hashes[:-1])
        if not same.size:
            return None
        runs: dict[int, set[int]] = {}
        for i in same.tolist():
            runs.setdefault(int(self.hashes[i]), set()).update((int(self.order[i]), int(self.order[i + 1])))
        best: tuple[int, int] | None = None
        for positions in runs.values():
            seen: dict[bytes, int] = {}
            for pos in sorted(positions):
                data = self._bytes(pos)
                if data in seen:
                    if best is None or pos < best[1]:
                        best = (seen[data], pos)
                    break
                seen[data] = pos
        return best

    def subset(self, keep: np.ndarray) -> IdIndex:
        """The index of the ids where ``keep`` (a boolean array in file order) is true, in file order."""
        lengths = np.diff(self.ends, prepend=0)
        blob = np.frombuffer(self.blob, np.uint8)[np.repeat(keep, lengths)].tobytes()
        ends = np.cumsum(lengths[keep], dtype=np.int64)
        position = np.cumsum(keep, dtype=np.int64) - 1
        chosen = keep[self.order]
        return IdIndex(blob, ends, self.hashes[chosen], position[self.order[chosen]].astype(self.order.dtype))


def code_point_ranks(ids: Sequence[str]) -> np.ndarray:
    """``rank[pos]``: the place of ``ids[pos]`` among all ``ids`` in ascending code-point order (the order
    of ``sorted(ids)``; 0 is the smallest), int32 under 2**31 ids. An :class:`IdIndex` is ranked from its
    blob, without a Python string per id; other sequences are encoded first. Ids must be distinct
    (equal ids get distinct ranks in position order)."""
    if isinstance(ids, IdIndex):
        return ids.code_point_ranks()
    data = [str(i).encode("utf-8", "surrogatepass") for i in ids]
    ends = np.cumsum(np.fromiter((len(d) for d in data), dtype=np.int64, count=len(data)), dtype=np.int64)
    return _byte_ranks(np.frombuffer(b"".join(data), np.uint8), ends)


_WORD = 8  # bytes of an id compared per pass, as one big-endian uint64


def _byte_ranks(blob: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Ranks of the byte strings ``blob`` cut at ``ends`` in ascending byte order (a prefix first).

    UTF-8 (also with surrogates passed through) orders byte strings as their code points, so this is
    the order of the decoded strings. Each pass compares the next 8 bytes of every id still tied with
    another (zero past its end) and refines the tied groups; an id of its own group is done. Equal
    padded bytes then order by length, which puts a prefix (``d1`` before ``d1\x00``) first."""
    n = len(ends)
    small: np.dtype[Any] = np.dtype(np.int32 if n < 2**31 else np.int64)
    starts = np.empty(n, np.int64)
    starts[:1] = 0
    starts[1:] = ends[:-1]
    lengths = (ends - starts).astype(small)
    group = np.zeros(n, small)  # dense rank of the bytes compared so far; equal = still tied
    offset = 0
    while n:
        tied = np.bincount(group, minlength=1)[group] > 1
        active = np.flatnonzero(tied & (lengths > offset))
        if not active.size:
            break
        word = np.zeros(n, np.uint64)
        acc = np.zeros(active.size, np.uint64)
        first, size = starts[active] + offset, lengths[active] - offset
        for b in range(_WORD):
            inside = size > b
            byte = blob[np.where(inside, first + b, 0)].astype(np.uint64) * inside
            acc = (acc << np.uint64(8)) | byte
        word[active] = acc
        order = np.lexsort((word, group))
        g, w = group[order], word[order]
        step = np.empty(n, small)
        step[0] = 0
        step[1:] = np.cumsum((g[1:] != g[:-1]) | (w[1:] != w[:-1]), dtype=small)
        group[order] = step
        del word, order, g, w, step
        offset += _WORD
    rank = np.empty(n, small)
    rank[np.lexsort((lengths, group))] = np.arange(n, dtype=small)
    return rank
