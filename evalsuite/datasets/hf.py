"""A Hugging Face `datasets` DatasetDict saved with `save_to_disk`.

Expected splits: `corpus` (`_id`, optional `title`, `text`), `queries` (`_id`, `text`) and the
qrels split named like the evaluation split (e.g. `test`) with columns `query-id`, `corpus-id`,
`score` (or `qid`/`docid`/`score`). Ids, texts, empty texts and relevance follow the same rules
as the BEIR files; "line" in a message is the row number (from 1) in that split.

The Arrow files are memory-mapped by `datasets`; the in-memory reader still copies every text into a
dict. A chunked run (``on_disk``) leaves the corpus texts in the Arrow files: :class:`ArrowCorpus`
holds the ids (compactly) and row numbers and reads texts by row, a chunk at a time.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import DatasetChanged, DatasetError
from .assemble import Texts, assemble
from .idindex import IdBuilder, IdIndex
from .model import Dataset, EmptyPolicy
from .ondisk import IndexedCorpus, collect, file_signature
from .qrels import Judgement, parse_relevance
from .records import TEXT_KEYS, check_id, check_text, join_title, metadata


def _dir_files(root: Path) -> dict[str, str]:
    files = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            with open(p, "rb") as fh:  # hashed a block at a time: a corpus's arrow files can be gigabytes
                files[str(p.relative_to(root))] = hashlib.file_digest(fh, "sha256").hexdigest()
    return files


def _col(split: Any, names: tuple[str, ...], where: Path) -> str:
    cols = list(split.column_names)
    for n in names:
        if n in cols:
            return n
    raise DatasetError(where, f"missing column: one of {list(names)} (columns: {cols})")


def _row_text(where: Path, i: int | None, text: object, title: object, has_title: bool) -> str:
    """A row's text as the model sees it: title and text joined when the split has titles."""
    body = check_text(where, i, text, "column 'text'")
    return join_title(check_text(where, i, title, "column 'title'"), body) if has_title else body.strip()


def _rows(
    split: Any, where: Path, role: str, policy: EmptyPolicy, seen: Callable[[str, int], None]
) -> Iterator[tuple[int, str, str, dict[str, str] | None]]:
    """``(row, id, text, metadata or None)`` for every row, checked like a BEIR record; ``seen(id, row)``
    is called before the row's text is read (it refuses a duplicate id)."""
    _col(split, ("_id",), where)
    _col(split, ("text",), where)
    has_title = "title" in split.column_names
    extra = [c for c in split.column_names if c not in TEXT_KEYS]
    for i, row in enumerate(split, start=1):
        ident = check_id(where, i, row["_id"], f"{role} id")
        seen(ident, i)
        text = _row_text(where, i, row["text"], row.get("title"), has_title)
        if not text and policy == "error":
            flag = "--empty-docs" if role == "document" else "--empty-queries"
            raise DatasetError(where, f"{role} {ident!r} has empty text; give it text or choose {flag} keep|skip", i)
        yield i, ident, text, (metadata({c: row[c] for c in extra}) or None) if extra else None


def _no_rows(where: Path, role: str) -> DatasetError:
    return DatasetError(where, f"the split has no rows; a {role} split needs at least one")


def _duplicate(where: Path, row: int, ident: str, role: str) -> DatasetError:
    return DatasetError(where, f"duplicate {role} id {ident!r}; ids must be unique", row)


def _texts(split: object, where: Path, role: str, policy: EmptyPolicy) -> Texts:
    out: dict[str, str] = {}
    empty: dict[str, str] = {}
    fields: dict[str, dict[str, str]] = {}

    def seen(ident: str, i: int) -> None:
        if ident in out:
            raise _duplicate(where, i, ident, role)

    for i, ident, text, meta in _rows(split, where, role, policy, seen):
        if not text:
            empty[ident] = f"row {i} ({ident!r})"
        out[ident] = text
        if meta:
            fields[ident] = meta
    if not out:
        raise _no_rows(where, role)
    return Texts(str(where), out, empty, fields)


class ArrowCorpus(IndexedCorpus):
    """The corpus split of a saved dataset, its texts left in the memory-mapped Arrow files and read by
    row when asked (a chunked run): only the ids (compactly) and row numbers are held."""

    def __init__(self, split: Any, where: Path, ids: IdIndex, rows: np.ndarray, has_title: bool) -> None:
        super().__init__(ids)
        self._split = split.select_columns(["text", "title"] if has_title else ["text"])
        self._where = where
        self._rows = rows
        self._has_title = has_title
        self._files = [Path(f["filename"]) for f in split.cache_files]
        self._signatures = [file_signature(f) for f in self._files]

    def __repr__(self) -> str:
        return f"ArrowCorpus({self._where}, {len(self)} documents)"

    def _subset(self, keep: np.ndarray) -> ArrowCorpus:
        out = ArrowCorpus.__new__(ArrowCorpus)
        out.__dict__.update(self.__dict__, _ids=self._ids.subset(keep), _rows=self._rows[keep])
        return out

    def _read(self, start: int, stop: int) -> list[str]:
        for f, signature in zip(self._files, self._signatures, strict=True):
            try:
                now = file_signature(f)
            except OSError:
                now = None
            if now != signature:
                raise DatasetChanged(
                    f,
                    "the saved dataset's file changed or vanished since it was indexed; re-run the evaluation "
                    "(and leave the dataset unchanged while it runs)",
                )
        rows = self._rows[start:stop]
        first, last = int(rows[0]), int(rows[-1])
        batch = self._split[first : last + 1] if last - first == len(rows) - 1 else self._split[rows.tolist()]
        titles = batch["title"] if self._has_title else [None] * len(rows)
        return [
            _row_text(self._where, None, t, ti, self._has_title) for t, ti in zip(batch["text"], titles, strict=True)
        ]


def _texts_on_disk(split: Any, where: Path, policy: EmptyPolicy) -> Texts:
    """:func:`_texts` for the corpus with the texts left in the Arrow files: the same checks and errors."""
    ids = IdBuilder()
    rows = array("q")

    def seen(ident: str, i: int) -> None:
        ids.add(ident)
        rows.append(i - 1)

    def refuse(index: IdIndex, first: int, second: int) -> DatasetError:
        return _duplicate(where, rows[second] + 1, index.id_at(second), "document")

    index, empty, fields = collect(_rows(split, where, "document", policy, seen), ids, refuse, "row")
    if not len(index):
        raise _no_rows(where, "document")
    positions = np.frombuffer(rows, dtype=np.int64).copy() if rows else np.zeros(0, np.int64)
    return Texts(str(where), ArrowCorpus(split, where, index, positions, "title" in split.column_names), empty, fields)


def load_hf(
    root: Path,
    split: str = "test",
    *,
    empty_docs: EmptyPolicy = "keep",
    empty_queries: EmptyPolicy = "skip",
    on_disk: bool = False,
) -> Dataset:
    """``on_disk`` leaves the corpus texts in the memory-mapped Arrow files (:class:`ArrowCorpus`)."""
    try:
        import datasets  # heavy; only here
    except ImportError as exc:  # pragma: no cover - a required dependency
        raise DatasetError(root, "the 'datasets' package is needed to read a saved Hugging Face dataset") from exc
    try:
        dd = datasets.load_from_disk(str(root))
    except Exception as exc:
        raise DatasetError(
            root,
            f"cannot be read as a saved Hugging Face dataset ({type(exc).__name__}: "
            f"{str(exc)[:200]}); save it again with DatasetDict.save_to_disk",
        ) from None
    if not isinstance(dd, datasets.DatasetDict):
        raise DatasetError(root, "expected a DatasetDict with splits 'corpus', 'queries' and the qrels split")
    for need in ("corpus", "queries", split):
        if need not in dd:
            raise DatasetError(root, f"DatasetDict has no split {need!r}; splits: {list(dd)}")
    if on_disk:
        corpus = _texts_on_disk(dd["corpus"], root / "corpus", empty_docs)
    else:
        corpus = _texts(dd["corpus"], root / "corpus", "document", empty_docs)
    queries = _texts(dd["queries"], root / "queries", "query", empty_queries)
    q = dd[split]
    where = root / split
    qcol = _col(q, ("query-id", "qid", "query_id"), where)
    dcol = _col(q, ("corpus-id", "docid", "corpus_id"), where)
    scol = _col(q, ("score", "relevance", "rel"), where)
    judgements: list[Judgement] = []
    seen: dict[tuple[str, str], int] = {}
    for i, row in enumerate(q, start=1):
        qid = check_id(where, i, row[qcol], "query id")
        did = check_id(where, i, row[dcol], "document id")
        if (qid, did) in seen:
            raise DatasetError(
                where, f"duplicate judgement for query {qid!r}, document {did!r} (first on row {seen[(qid, did)]})", i
            )
        seen[(qid, did)] = i
        judgements.append((qid, did, parse_relevance(where, i, row[scol]), i))
    return assemble(
        name=root.resolve().name,
        fmt="hf-disk",
        split=split,
        qrels_path=where,
        corpus=corpus,
        queries=queries,
        judgements=judgements,
        files=_dir_files(root),
        empty_docs=empty_docs,
        empty_queries=empty_queries,
    )
