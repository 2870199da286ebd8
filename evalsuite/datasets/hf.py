"""A Hugging Face `datasets` DatasetDict saved with `save_to_disk`.

Expected splits: `corpus` (`_id`, optional `title`, `text`), `queries` (`_id`, `text`) and the
qrels split named like the evaluation split (e.g. `test`) with columns `query-id`, `corpus-id`,
`score` (or `qid`/`docid`/`score`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import DatasetError
from .beir import join_title
from .model import Dataset
from .qrels import Judgement, assemble


def _dir_files(root: Path) -> dict[str, str]:
    files = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            files[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return files


def _col(split: object, names: tuple[str, ...], where: Path) -> str:
    cols = getattr(split, "column_names")
    for n in names:
        if n in cols:
            return n
    raise DatasetError(where, f"missing column: one of {list(names)} (columns: {cols})")


def load_hf(root: Path, split: str = "test") -> Dataset:
    try:
        import datasets  # heavy; only here
    except ImportError as exc:  # pragma: no cover - a required dependency
        raise DatasetError(root, "the 'datasets' package is needed to read a saved Hugging Face dataset") from exc
    dd = datasets.load_from_disk(str(root))
    if not isinstance(dd, datasets.DatasetDict):
        raise DatasetError(root, "expected a DatasetDict with splits 'corpus', 'queries' and the qrels split")
    for need in ("corpus", "queries", split):
        if need not in dd:
            raise DatasetError(root, f"DatasetDict has no split {need!r}; splits: {list(dd)}")
    corpus: dict[str, str] = {}
    c = dd["corpus"]
    has_title = "title" in c.column_names
    _col(c, ("_id",), root / "corpus")
    _col(c, ("text",), root / "corpus")
    for i, row in enumerate(c, start=1):
        did = str(row["_id"]).strip()
        if did in corpus:
            raise DatasetError(root / "corpus", f"duplicate document id {did!r}", i)
        text = join_title((row.get("title") or "").strip() if has_title else "", (row["text"] or "").strip())
        if not did or not text:
            raise DatasetError(root / "corpus", f"row {i}: empty id or text", i)
        corpus[did] = text
    queries: dict[str, str] = {}
    for i, row in enumerate(dd["queries"], start=1):
        qid = str(row["_id"]).strip()
        if qid in queries:
            raise DatasetError(root / "queries", f"duplicate query id {qid!r}", i)
        if not qid or not (row["text"] or "").strip():
            raise DatasetError(root / "queries", f"row {i}: empty id or text", i)
        queries[qid] = row["text"].strip()
    q = dd[split]
    qcol = _col(q, ("query-id", "qid", "query_id"), root / split)
    dcol = _col(q, ("corpus-id", "docid", "corpus_id"), root / split)
    scol = _col(q, ("score", "relevance", "rel"), root / split)
    judgements: list[Judgement] = []
    for i, row in enumerate(q, start=1):
        rel = row[scol]
        if isinstance(rel, bool) or not isinstance(rel, (int, float)) or rel != int(rel):
            raise DatasetError(root / split, f"relevance {rel!r} is not an integer", i)
        judgements.append((str(row[qcol]), str(row[dcol]), int(rel), i))
    return assemble(name=root.resolve().name, fmt="hf-disk", split=split, qrels_path=root / split,
                    corpus=corpus, queries=queries, judgements=judgements, files=_dir_files(root))
