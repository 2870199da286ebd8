"""Qrels parsing (BEIR TSV with header, TREC `qid 0 docid rel`) and the shared finishing step."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable, Mapping

from ..errors import DatasetError
from .model import Dataset, DatasetIdentity

Judgement = tuple[str, str, int, int]  # query id, doc id, relevance, line number

_BEIR_HEADERS = {("query-id", "corpus-id", "score"), ("qid", "docid", "score"), ("query_id", "corpus_id", "score")}


def _parse_rel(path: Path, line: int, raw: str) -> int:
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if value != value or value != int(value):
        raise DatasetError(path, f"relevance {raw!r} is not an integer; write graded relevance as 0, 1, 2, ...", line)
    return int(value)


def read_qrels(path: Path) -> list[Judgement]:
    """Read a qrels file, recognising BEIR TSV (with header) or TREC (4 columns) by its shape."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    lines = text.splitlines()
    out: list[Judgement] = []
    seen: dict[tuple[str, str], int] = {}
    start = 0
    fmt = "trec"
    if lines:
        first = tuple(c.strip().lower() for c in lines[0].split("\t"))
        if first in _BEIR_HEADERS:
            fmt, start = "beir", 1
        elif len(lines[0].split()) == 3 and "\t" in lines[0]:
            raise DatasetError(path, "3-column qrels need a header row 'query-id\\tcorpus-id\\tscore'", 1)
    for i in range(start, len(lines)):
        ln = i + 1
        raw = lines[i]
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        cols = raw.split("\t") if fmt == "beir" else raw.split()
        if fmt == "beir":
            if len(cols) != 3:
                raise DatasetError(path, f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(cols)}", ln)
            qid, did, rel = (c.strip() for c in cols)
        else:
            if len(cols) != 4:
                raise DatasetError(path, f"expected TREC qrels 'qid iteration docid relevance' (4 columns), got {len(cols)}", ln)
            qid, _, did, rel = cols
        if not qid or not did:
            raise DatasetError(path, "empty query or document id", ln)
        key = (qid, did)
        if key in seen:
            raise DatasetError(path, f"duplicate judgement for query {qid!r}, document {did!r} (first on line {seen[key]})", ln)
        seen[key] = ln
        out.append((qid, did, _parse_rel(path, ln, rel), ln))
    return out


def dataset_sha256(files: Mapping[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}\0{files[name]}\n".encode())
    return h.hexdigest()


def assemble(*, name: str, fmt: str, split: str, qrels_path: Path,
             corpus: dict[str, str], queries: dict[str, str],
             judgements: Iterable[Judgement], files: Mapping[str, str]) -> Dataset:
    """Join qrels with corpus and queries: count unknown ids, drop queries with nothing relevant."""
    warnings: list[str] = []
    qrels: dict[str, dict[str, int]] = {}
    unknown = 0
    examples: list[str] = []
    for qid, did, rel, ln in judgements:
        if qid not in queries or did not in corpus:
            unknown += 1
            if len(examples) < 3:
                which = f"query {qid!r}" if qid not in queries else f"document {did!r}"
                examples.append(f"line {ln}: unknown {which}")
            continue
        qrels.setdefault(qid, {})[did] = rel
    if unknown:
        warnings.append(f"{qrels_path}: {unknown} judgement(s) name ids absent from the corpus or queries and were "
                        f"ignored ({'; '.join(examples)})")
    kept = {qid: q for qid, q in qrels.items() if any(r > 0 for r in q.values())}
    kept_queries = {qid: text for qid, text in queries.items() if qid in kept}
    dropped = len(queries) - len(kept_queries)
    if not kept_queries:
        raise DatasetError(qrels_path, f"no query of split {split!r} has a relevant (score > 0) judged document; "
                           "check that query ids in the qrels match queries.jsonl")
    if dropped:
        warnings.append(f"{dropped} of {len(queries)} queries have no relevant judged document in split "
                        f"{split!r} and were dropped")
    identity = DatasetIdentity(
        name=name, format=fmt, split=split, sha256=dataset_sha256(files), files=dict(files),
        n_documents=len(corpus), n_queries=len(kept_queries),
        n_judgements=sum(len(kept[q]) for q in kept_queries), n_queries_dropped=dropped,
        n_unknown_qrels=unknown, n_queries_file=len(queries),
    )
    return Dataset(corpus=corpus, queries=kept_queries,
                   qrels={q: dict(kept[q]) for q in kept_queries}, identity=identity, warnings=tuple(warnings))
