"""Chunk ids as one Arrow string column, not one Python string per row, and the set questions the ``ids`` check
asks of them (stored against the corpus) answered by Arrow's hash kernels.

A million ids as Python strings cost ~70 MB and a second to make; as an Arrow ``large_string`` column they are
their UTF-8 bytes and one offset each. :class:`IdColumn` is a read-only sequence over such a column (``ids[row]``
decodes one id, a slice a list), so the code that names a few rows reads it like the list it replaces.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

_ITER_BATCH = 65_536


class IdColumn(Sequence[str]):
    """A read-only sequence of ids held as one Arrow ``large_string`` array."""

    def __init__(self, array: pa.Array) -> None:
        import pyarrow as pa

        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
        self.arrow: pa.Array = array if array.type == pa.large_string() else array.cast(pa.large_string())

    @classmethod
    def of(cls, ids: Sequence[str]) -> IdColumn:
        """``ids`` as a column (an :class:`IdColumn` as it is; a corpus's compact id index without decoding)."""
        import pyarrow as pa

        if isinstance(ids, IdColumn):
            return ids
        from ..datasets.idindex import IdIndex

        if isinstance(ids, IdIndex):
            n = len(ids)
            offsets = np.concatenate([np.zeros(1, np.int64), np.asarray(ids.ends, np.int64)])
            return cls(pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(ids.blob)))
        return cls(pa.array(list(ids), pa.large_string()))

    @classmethod
    def concat(cls, parts: Sequence[IdColumn]) -> IdColumn:
        import pyarrow as pa

        if not parts:
            return cls(pa.array([], pa.large_string()))
        return cls(pa.concat_arrays([p.arrow for p in parts]))

    def __len__(self) -> int:
        return len(self.arrow)

    @overload
    def __getitem__(self, pos: int) -> str: ...

    @overload
    def __getitem__(self, pos: slice) -> list[str]: ...

    def __getitem__(self, pos: int | slice) -> str | list[str]:
        n = len(self)
        if isinstance(pos, slice):
            start, stop, step = pos.indices(n)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return list(self.arrow.slice(start, max(0, stop - start)).to_pylist())
        i = operator.index(pos)
        if not -n <= i < n:
            raise IndexError(f"row {i} out of range for {n} ids")
        return str(self.arrow[i + n if i < 0 else i].as_py())

    def take(self, rows: Sequence[int] | np.ndarray) -> list[str]:
        """The ids of ``rows`` (in that order)."""
        import pyarrow as pa

        return list(self.arrow.take(pa.array(np.asarray(rows, dtype=np.int64))).to_pylist())

    def slice(self, start: int, stop: int) -> IdColumn:
        """Rows ``start .. stop`` as a column (no copy)."""
        return IdColumn(self.arrow.slice(start, max(0, stop - start)))

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self), _ITER_BATCH):
            yield from self.arrow.slice(start, _ITER_BATCH).to_pylist()

    def rows_of(self, ids: Sequence[str]) -> np.ndarray:
        """The rows (ascending) whose id is one of ``ids``."""
        import pyarrow as pa
        import pyarrow.compute as pc

        mask = pc.is_in(self.arrow, value_set=pa.array(list(ids), pa.large_string()))
        return np.flatnonzero(mask.to_numpy(zero_copy_only=False))


@dataclass(frozen=True)
class IdComparison:
    """The stored ids against the corpus's, as the ``ids`` check reports them (each list in the order the check
    has always used: first seen for stored ids, code-point order for missing chunks)."""

    distinct: int  # distinct stored ids
    unknown: list[str]  # stored ids the corpus does not know, distinct, in order of first row (at most ``shown``)
    n_unknown: int
    missing: list[str]  # corpus ids nothing is stored for, sorted (at most ``shown``)
    n_missing: int
    duplicated: dict[str, list[int]]  # every id stored on more than one row -> its rows, in order of first row
    all_integer: bool  # every stored id is unknown and reads as an integer (FAISS ids without a sidecar)


def compare_ids(stored: IdColumn, corpus: IdColumn, shown: int) -> IdComparison:
    """``stored`` (row -> chunk id) against ``corpus`` (its ids, distinct), hashed by Arrow, not in Python:
    only the duplicated rows and the first ``shown`` unknown and missing ids become Python objects."""
    import pyarrow as pa
    import pyarrow.compute as pc

    s, c = stored.arrow, corpus.arrow
    counts = pc.value_counts(s)  # distinct values in order of first appearance, with their counts
    values, n = counts.field("values"), counts.field("counts").to_numpy(zero_copy_only=False)
    known = pc.is_in(values, value_set=c).to_numpy(zero_copy_only=False)
    unknown_values = values.filter(pa.array(~known))
    absent = c.filter(pc.invert(pc.is_in(c, value_set=values)))
    missing = absent.take(pc.sort_indices(absent)[:shown]) if len(absent) else absent
    repeated = values.filter(pa.array(n > 1))
    duplicated: dict[str, list[int]] = {}
    if len(repeated):
        rows = np.flatnonzero(pc.is_in(s, value_set=repeated).to_numpy(zero_copy_only=False))
        for row, cid in zip(rows.tolist(), s.take(pa.array(rows)).to_pylist(), strict=True):
            duplicated.setdefault(cid, []).append(row)
    every = len(unknown_values) == len(values) > 0
    return IdComparison(
        distinct=len(values),
        unknown=list(unknown_values.slice(0, shown).to_pylist()),
        n_unknown=len(unknown_values),
        missing=list(missing.to_pylist()),
        n_missing=len(absent),
        duplicated=duplicated,
        all_integer=every and all(i.lstrip("-").isdigit() for i in unknown_values.to_pylist()),
    )
