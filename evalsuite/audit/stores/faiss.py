"""FAISS index files (``faiss:PATH``): whatever ``faiss.read_index`` reads, chunk ids from a sidecar.

Flat, ``IndexIDMap``/``IDMap2``, IVF (any codec), HNSW, PQ/SQ. The file is memory-mapped
(``IO_FLAG_MMAP``) where FAISS allows it and read into memory otherwise. Vectors are streamed with
``reconstruct_n`` in blocks (an IVF gets a direct map first; PQ/SQ give their decoded vectors);
an ``IndexIDMap`` gives the FAISS int id of each stored row. Chunk ids come from ``--ids``: a text
file with one chunk id per line (line i names FAISS id i, or the i-th stored vector of an index without
ids), JSONL ``{"faiss_id": 3, "chunk_id": "d3"}`` lines, or a Parquet file with those two columns (with
pyarrow installed). Without ``--ids`` a chunk id is the FAISS id as a string. The chunk ids are held as one Arrow
string column (:class:`~..idcolumn.IdColumn`), not a Python string per row; a plain sidecar of printable ASCII
ids (the usual one) is cut into that column at its newlines without decoding a line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...base.errors import IndexSourceError
from ..idcolumn import IdColumn
from ..source import IndexInfo, IndexSource, Metric, SourceOptions, StoreKind

if TYPE_CHECKING:
    import faiss as faiss_mod

BLOCK = 65536  # rows reconstructed at once by the exact search


def _read(path: Path, mmap: bool) -> tuple[faiss_mod.Index, bool]:
    import faiss

    if not path.is_file():
        raise IndexSourceError(f"--index faiss:{path}: no such file; give the path of a file faiss.write_index wrote")
    errors: list[str] = []
    if mmap:
        try:
            return faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY), True
        except (RuntimeError, MemoryError) as exc:  # this index type cannot be mapped: read it instead
            errors.append(str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__)
    try:
        return faiss.read_index(str(path)), False
    except (RuntimeError, MemoryError) as exc:
        msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise IndexSourceError(
            f"--index faiss:{path}: FAISS cannot read this file ({msg}); it is truncated, corrupt or not a "
            "FAISS index: copy it again from where the ingest job wrote it"
        ) from None


def _plain_lines(path: Path) -> IdColumn | None:
    """A one-id-per-line sidecar cut at its newlines into a column, when every byte is printable ASCII (no space)
    or a newline and the first line is not JSON: then each line is its id exactly as ``line.strip()`` of the
    decoded text gives it. None otherwise (the text is read line by line); an empty line is refused here too."""
    import pyarrow as pa

    data = np.fromfile(path, dtype=np.uint8)
    newline = data == 0x0A
    if not data.size or data[0] == ord("{") or not np.all(newline | ((data > 0x20) & (data < 0x7F))):
        return None
    ends = np.flatnonzero(newline)
    if not ends.size or ends[-1] != data.size - 1:
        ends = np.append(ends, data.size)  # the last line without its newline
    starts = np.concatenate([[0], ends[:-1] + 1])
    empty = np.flatnonzero(ends == starts)
    if empty.size:
        raise IndexSourceError(f"--ids {path}:{int(empty[0]) + 1}: an empty line; every line must name one chunk id")
    blob = data[~newline]
    offsets = np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64)
    return IdColumn(pa.LargeStringArray.from_buffers(len(ends), pa.py_buffer(offsets), pa.py_buffer(blob)))


def _read_sidecar(path: Path) -> IdColumn | dict[int, str]:
    """A column of ids (line i = FAISS id i) or a mapping FAISS id -> chunk id (JSONL or Parquet)."""
    if not path.is_file():
        raise IndexSourceError(f"--ids {path}: no such file; give the chunk-id sidecar the ingest job wrote")
    if path.suffix not in (".parquet", ".jsonl"):
        column = _plain_lines(path)
        if column is not None:
            return column
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise IndexSourceError(
                f"--ids {path}: reading Parquet needs pyarrow (pip install pyarrow), or give one id per line"
            ) from None
        try:
            table = pq.read_table(path, columns=["faiss_id", "chunk_id"])
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise IndexSourceError(
                f"--ids {path}: not a Parquet file with columns faiss_id, chunk_id ({exc})"
            ) from None
        fids = table.column("faiss_id").to_pylist()
        cids = table.column("chunk_id").to_pylist()
        return _mapping(path, zip(fids, cids, strict=True), None)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise IndexSourceError(f"--ids {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    lines = text.splitlines()
    if path.suffix == ".jsonl" or (lines and lines[0].lstrip().startswith("{")):
        pairs: list[tuple[Any, Any]] = []
        for no, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise IndexSourceError(f"--ids {path}:{no}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict) or "faiss_id" not in row or "chunk_id" not in row:
                raise IndexSourceError(f'--ids {path}:{no}: each line must be {{"faiss_id": INT, "chunk_id": STR}}')
            pairs.append((row["faiss_id"], row["chunk_id"]))
        return _mapping(path, pairs, lines)
    for no, line in enumerate(lines, 1):
        if not line.strip():
            raise IndexSourceError(f"--ids {path}:{no}: an empty line; every line must name one chunk id")
    return IdColumn.of([line.strip() for line in lines])


def _mapping(path: Path, pairs: Any, lines: list[str] | None) -> dict[int, str]:
    out: dict[int, str] = {}
    for no, (fid, cid) in enumerate(pairs, 1):
        if isinstance(fid, bool) or not isinstance(fid, int):
            raise IndexSourceError(
                f"--ids {path}: row {no}: faiss_id {fid!r} is not an integer; FAISS ids are int64 — map each "
                "FAISS id (int) to its chunk id (string)"
            )
        if fid in out:
            raise IndexSourceError(f"--ids {path}: row {no}: faiss_id {fid} is mapped twice")
        out[fid] = str(cid)
    return out


class FaissSource(IndexSource):
    """An open FAISS file with its chunk ids; see the module docstring."""

    def __init__(self, path: Path, options: SourceOptions) -> None:
        self.path = path
        self._open(options.mmap)
        n = int(self.index.ntotal)
        if n == 0:
            raise IndexSourceError(
                f"--index faiss:{path}: the index holds no vectors; the ingest job wrote an empty index"
            )
        self.chunk_ids = self._chunk_ids(options.ids_path, n)

    def _open(self, mmap: bool) -> None:
        import faiss

        read, self.mapped = _read(self.path, mmap)
        self.index: Any = read  # faiss's SWIG classes: attributes depend on the concrete index type
        self.storage: Any = self.index  # the index whose rows reconstruct_n reads
        self.faiss_ids: np.ndarray | None = None  # stored row -> FAISS id, for an IndexIDMap
        if hasattr(self.index, "id_map"):
            self.faiss_ids = faiss.vector_to_array(self.index.id_map).astype(np.int64)
            self.storage = faiss.downcast_index(read.index)  # type: ignore[attr-defined]
        self.ivf = faiss.try_extract_index_ivf(self.storage)
        if self.ivf is not None and int(self.index.ntotal) > 0:
            try:
                self.ivf.make_direct_map()  # reconstruct_n over an IVF needs it
            except RuntimeError:
                if not self.mapped:
                    raise IndexSourceError(
                        f"--index faiss:{self.path}: FAISS cannot reconstruct this IVF index's vectors"
                    ) from None
                self._open(False)  # a mapped file that cannot take a direct map: read it instead

    def _chunk_ids(self, ids_path: Path | None, n: int) -> IdColumn:
        import pyarrow as pa

        fids = self.faiss_ids if self.faiss_ids is not None else np.arange(n, dtype=np.int64)
        if ids_path is None:
            return IdColumn(pa.array(fids, pa.int64()).cast(pa.large_string()))
        side = _read_sidecar(ids_path)
        if isinstance(side, IdColumn):
            if len(side) != n:
                what = "fewer" if len(side) < n else "more"
                raise IndexSourceError(
                    f"--ids {ids_path}: {len(side)} ids for {n} vectors in faiss:{self.path} ({what} ids than "
                    "vectors); the sidecar must name one chunk id per line, line i for FAISS id i — "
                    "write it from the same ingest run as the index"
                )
            if self.faiss_ids is None:
                return side
            bad = fids[(fids < 0) | (fids >= n)]
            if bad.size:
                raise IndexSourceError(
                    f"--ids {ids_path}: faiss:{self.path} holds FAISS id {int(bad[0])} but the sidecar has lines "
                    f"for ids 0..{n - 1} only; give a JSONL sidecar mapping each faiss_id to its chunk_id"
                )
            return IdColumn(side.arrow.take(pa.array(fids)))
        missing = [int(f) for f in fids if int(f) not in side]
        if missing:
            raise IndexSourceError(
                f"--ids {ids_path}: {len(missing)} FAISS id(s) of faiss:{self.path} have no chunk id "
                f"(first {missing[0]}); the sidecar must map every stored FAISS id"
            )
        if len(side) != n:
            raise IndexSourceError(
                f"--ids {ids_path}: {len(side)} ids for {n} vectors in faiss:{self.path} (more ids than vectors); "
                "write the sidecar from the same ingest run as the index"
            )
        return IdColumn.of([side[int(f)] for f in fids])

    def info(self) -> IndexInfo:
        import faiss

        metric: Metric = "ip" if self.index.metric_type == faiss.METRIC_INNER_PRODUCT else "l2"
        if self.index.metric_type not in (faiss.METRIC_INNER_PRODUCT, faiss.METRIC_L2):
            raise IndexSourceError(
                f"--index faiss:{self.path}: metric type {self.index.metric_type} is neither inner product nor L2"
            )
        params: dict[str, int | float | str] = {}
        if self.ivf is not None:
            params.update(nlist=int(self.ivf.nlist), nprobe=int(self.ivf.nprobe))
        hnsw = getattr(self.storage, "hnsw", None)
        if hnsw is not None:
            params.update(M=int(hnsw.nb_neighbors(1)), efSearch=int(hnsw.efSearch))
        return IndexInfo(
            store="faiss",
            location=str(self.path),
            count=int(self.index.ntotal),
            dim=int(self.index.d),
            metric=metric,
            index_type=type(self.index).__name__
            + (f"({type(self.storage).__name__})" if self.storage is not self.index else ""),
            search_params=params,
        )

    def _rows(self, start: int, n: int) -> np.ndarray:
        out: np.ndarray = np.asarray(self.storage.reconstruct_n(start, n), dtype=np.float32).reshape(n, -1)
        return out

    def iter_vectors(self, batch_size: int) -> Iterator[tuple[list[str], np.ndarray]]:
        total = int(self.index.ntotal)
        for start in range(0, total, batch_size):
            n = min(batch_size, total - start)
            yield self.chunk_ids[start : start + n], self._rows(start, n)

    def ids_at(self, rows: np.ndarray) -> list[str]:
        return self.chunk_ids.take(rows)

    def fetch(self, ids: Sequence[str]) -> dict[str, list[np.ndarray]]:
        out: dict[str, list[np.ndarray]] = {}
        rows = self.chunk_ids.rows_of(list(dict.fromkeys(ids)))
        for row, cid in zip(rows.tolist(), self.chunk_ids.take(rows), strict=True):
            out.setdefault(cid, []).append(self._rows(row, 1)[0])
        return out

    def _labels(self, labels: np.ndarray, scores: np.ndarray, *, rows: bool) -> list[list[tuple[str, float]]]:
        l2 = self.info().metric == "l2"
        lookup: dict[int, str] | None = None
        if not rows and self.faiss_ids is not None:
            lookup = {int(f): c for f, c in zip(self.faiss_ids.tolist(), self.chunk_ids, strict=True)}
        out: list[list[tuple[str, float]]] = []
        for lab, sc in zip(labels, scores, strict=True):
            found = lab[lab >= 0]
            names = [lookup[j] for j in found.tolist()] if lookup is not None else self.chunk_ids.take(found)
            out.append([(cid, 0.0 - s if l2 else s) for cid, s in zip(names, sc[lab >= 0].tolist(), strict=True)])
        return out

    def search(self, queries: np.ndarray, k: int, *, exact: bool) -> list[list[tuple[str, float]]]:
        q = np.ascontiguousarray(queries, dtype=np.float32)
        if not exact:
            scores, labels = self.index.search(q, k)
            return self._labels(labels, scores, rows=False)
        import faiss

        total = int(self.index.ntotal)
        ip = self.index.metric_type == faiss.METRIC_INNER_PRODUCT
        best_s = np.full((len(q), 0), 0.0, dtype=np.float32)
        best_i = np.zeros((len(q), 0), dtype=np.int64)
        for start in range(0, total, BLOCK):
            n = min(BLOCK, total - start)
            flat = faiss.IndexFlatIP(self.index.d) if ip else faiss.IndexFlatL2(self.index.d)
            flat.add(self._rows(start, n))
            s, i = flat.search(q, min(k, n))
            s = s if ip else 0.0 - s  # higher is better while merging
            best_s = np.concatenate([best_s, s], axis=1)
            best_i = np.concatenate([best_i, np.where(i >= 0, i + start, -1)], axis=1)
            order = np.argsort(-best_s, axis=1, kind="stable")[:, :k]
            best_s = np.take_along_axis(best_s, order, axis=1)
            best_i = np.take_along_axis(best_i, order, axis=1)
        return [
            list(zip(self.chunk_ids.take(li[li >= 0]), (float(s) for s in ls[li >= 0].tolist()), strict=True))
            for li, ls in zip(best_i, best_s, strict=True)
        ]

    def close(self) -> None:
        self.index = None


def open_faiss(uri: str, options: SourceOptions) -> IndexSource:
    path = Path(uri.removeprefix("faiss:")).expanduser()
    return FaissSource(path, options)


KIND = StoreKind(
    name="faiss",
    schemes=("faiss:",),
    extra=None,
    module="faiss",
    open=open_faiss,
    help="a FAISS index file (faiss:PATH) with chunk ids from --ids (one per line, JSONL or Parquet)",
)
