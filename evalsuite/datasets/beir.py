"""BEIR layout: corpus.jsonl, queries.jsonl, qrels/<split>.tsv (or a TREC qrels file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from ..errors import DatasetError
from ..io import sha256_file
from .model import Dataset
from .qrels import assemble, read_qrels

QRELS_SUFFIXES = (".tsv", ".trec", ".qrels", ".txt")


def join_title(title: str, text: str) -> str:
    """Document text as the model sees it: title and text joined by one space."""
    return f"{title} {text}" if title else text


def _records(path: Path) -> Iterator[tuple[int, dict]]:
    with open(path, "rb") as fh:
        for ln, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except UnicodeDecodeError:
                raise DatasetError(path, "line is not valid UTF-8; re-encode the file as UTF-8", ln) from None
            except json.JSONDecodeError as exc:
                reason = exc.msg[:-3] if exc.msg.endswith(" at") else exc.msg
                raise DatasetError(path, f"invalid JSON ({reason} at column {exc.colno}); each line must be one "
                                   "JSON object", ln) from None
            if not isinstance(obj, dict):
                raise DatasetError(path, f"expected a JSON object, got {type(obj).__name__}", ln)
            yield ln, obj


def _field(path: Path, ln: int, obj: dict, key: str, required: bool = True) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise DatasetError(path, f"missing field {key!r}", ln)
        return ""
    if isinstance(value, (int, float)) and key == "_id" and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise DatasetError(path, f"field {key!r} must be a string, got {type(value).__name__}", ln)
    return value


def read_corpus(path: Path) -> dict[str, str]:
    corpus: dict[str, str] = {}
    first: dict[str, int] = {}
    for ln, obj in _records(path):
        did = _field(path, ln, obj, "_id").strip()
        if not did:
            raise DatasetError(path, "empty '_id'", ln)
        if did in corpus:
            raise DatasetError(path, f"duplicate document id {did!r} (first on line {first[did]}); ids must be unique", ln)
        text = join_title(_field(path, ln, obj, "title", required=False).strip(),
                          _field(path, ln, obj, "text").strip())
        if not text:
            raise DatasetError(path, f"document {did!r} has empty title and text; remove it or give it text", ln)
        corpus[did] = text
        first[did] = ln
    if not corpus:
        raise DatasetError(path, "no documents")
    return corpus


def read_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    first: dict[str, int] = {}
    for ln, obj in _records(path):
        qid = _field(path, ln, obj, "_id").strip()
        if not qid:
            raise DatasetError(path, "empty '_id'", ln)
        if qid in queries:
            raise DatasetError(path, f"duplicate query id {qid!r} (first on line {first[qid]}); ids must be unique", ln)
        text = _field(path, ln, obj, "text").strip()
        if not text:
            raise DatasetError(path, f"query {qid!r} has empty text", ln)
        queries[qid] = text
        first[qid] = ln
    if not queries:
        raise DatasetError(path, "no queries")
    return queries


def find_qrels(root: Path, split: str) -> Path:
    for suffix in QRELS_SUFFIXES:
        p = root / "qrels" / f"{split}{suffix}"
        if p.is_file():
            return p
    present = sorted(p.stem for p in (root / "qrels").glob("*") if p.suffix in QRELS_SUFFIXES) \
        if (root / "qrels").is_dir() else []
    raise DatasetError(root / "qrels", f"no qrels for split {split!r}; splits present: {present or 'none'}")


def load_beir(root: Path, split: str = "test", qrels_file: Path | None = None) -> Dataset:
    corpus_path, queries_path = root / "corpus.jsonl", root / "queries.jsonl"
    for p in (corpus_path, queries_path):
        if not p.is_file():
            raise DatasetError(p, "file not found; a BEIR dataset needs corpus.jsonl, queries.jsonl and qrels/<split>.tsv")
    qrels_path = qrels_file or find_qrels(root, split)
    corpus = read_corpus(corpus_path)
    queries = read_queries(queries_path)
    judgements = read_qrels(qrels_path)
    files = {(str(p.relative_to(root)) if p.is_relative_to(root) else str(p)): sha256_file(p)
             for p in (corpus_path, queries_path, qrels_path)}
    return assemble(name=root.resolve().name, fmt="beir", split=split, qrels_path=qrels_path,
                    corpus=corpus, queries=queries, judgements=judgements, files=files)
