"""Document ids held compactly and found by hash: the id side of a corpus that stays on disk.

A dict of millions of ids costs about a hundred bytes per id (the str, the int, the hash slot). Here
the ids are one UTF-8 blob in file order with an end offset each (8 bytes), plus a 64-bit hash per
id sorted once (8 bytes) and each hash's position in file order (4 bytes under 2**31 ids): about 20
bytes per id beside its own bytes. A lookup hashes the id, finds the hash by binary search and
compares the stored bytes (so a hash collision can never return the wrong document). The hash is
BLAKE2b, not Python's ``hash()``: an index pickled to another process finds the same ids there.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

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
class IdIndex:
    """Ids in file order (``blob`` cut at ``ends``), with ``hashes`` sorted and ``order`` their positions."""

    blob: bytes
    ends: np.ndarray
    hashes: np.ndarray
    order: np.ndarray

    def __len__(self) -> int:
        return len(self.ends)

    def _bytes(self, pos: int) -> bytes:
        return self.blob[int(self.ends[pos - 1]) if pos else 0 : int(self.ends[pos])]

    def id_at(self, pos: int) -> str:
        return self._bytes(pos).decode("utf-8")

    def ids(self, start: int = 0, stop: int | None = None) -> list[str]:
        """The ids at positions ``start .. stop`` (file order)."""
        stop = len(self) if stop is None else min(stop, len(self))
        if stop <= start:
            return []
        blob = self.blob
        begin = int(self.ends[start - 1]) if start else 0
        out = []
        for end in self.ends[start:stop].tolist():
            out.append(blob[begin:end].decode("utf-8"))
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
