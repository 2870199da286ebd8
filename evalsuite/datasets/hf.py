"""A Hugging Face `datasets` DatasetDict saved with `save_to_disk`.

Expected splits: `corpus` (`_id`, optional `title`, `text`), `queries` (`_id`, `text`) and the
qrels split named like the evaluation split (e.g. `test`) with columns `query-id`, `corpus-id`,
`score` (or `qid`/`docid`/`score`). Ids, texts, empty texts and relevance follow the same rules
as the BEIR files; "line" in a message is the row number (from 1) in that split.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from .assemble import Texts, assemble
from .model import Dataset, EmptyPolicy
from .qrels import Judgement, parse_relevance
from .records import TEXT_KEYS, check_id, check_text, join_title, metadata


def _dir_files(root: Path) -> dict[str, str]:
    files = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            files[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return files


def _col(split: Any, names: tuple[str, ...], where: Path) -> str:
    cols = list(split.column_names)
    for n in names:
        if n in cols:
            return n
    raise DatasetError(where, f"missing column: one of {list(names)} (columns: {cols})")


def _texts(split: Any, where: Path, role: str, policy: EmptyPolicy) -> Texts:
    _col(split, ("_id",), where)
    _col(split, ("text",), where)
    has_title = "title" in split.column_names
    out: dict[str, str] = {}
    empty: dict[str, str] = {}
    fields: dict[str, dict[str, str]] = {}
    extra = [c for c in split.column_names if c not in TEXT_KEYS]
    for i, row in enumerate(split, start=1):
        ident = check_id(where, i, row["_id"], f"{role} id")
        if ident in out:
            raise DatasetError(where, f"duplicate {role} id {ident!r}; ids must be unique", i)
        text = check_text(where, i, row["text"], "column 'text'")
        text = join_title(check_text(where, i, row["title"], "column 'title'"), text) if has_title else text.strip()
        if not text:
            if policy == "error":
                flag = "--empty-docs" if role == "document" else "--empty-queries"
                raise DatasetError(
                    where, f"{role} {ident!r} has empty text; give it text or choose {flag} keep|skip", i
                )
            empty[ident] = f"row {i} ({ident!r})"
        out[ident] = text
        meta = metadata({c: row[c] for c in extra}) if extra else None
        if meta:
            fields[ident] = meta
    if not out:
        raise DatasetError(where, f"the split has no rows; a {role} split needs at least one")
    return Texts(str(where), out, empty, fields)


def load_hf(
    root: Path, split: str = "test", *, empty_docs: EmptyPolicy = "keep", empty_queries: EmptyPolicy = "skip"
) -> Dataset:
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
