"""BEIR layout: corpus.jsonl, queries.jsonl, qrels/<split>.tsv (or a TREC qrels file), each optionally
compressed (``.gz``, ``.bz2``, ``.xz``)."""

from __future__ import annotations

from pathlib import Path

from ..base.errors import DatasetError
from .assemble import Texts, assemble
from .files import TextFile, find_variant, logical_name
from .model import Dataset, EmptyPolicy
from .qrels import read_qrels
from .records import NO_DOCUMENTS, documents, duplicate_id, id_field, join_title, metadata, records, text_field

QRELS_SUFFIXES = (".tsv", ".trec", ".qrels", ".txt")
_LAYOUT = "a BEIR dataset directory holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv (each may be .gz)"

__all__ = ["QRELS_SUFFIXES", "find_qrels", "join_title", "load_beir", "read_corpus", "read_queries"]


def read_corpus(source: TextFile, policy: EmptyPolicy = "keep") -> Texts:
    """Documents by id; an empty one (no title, no text) is recorded, or refused under ``policy='error'``."""
    path = source.path
    corpus: dict[str, str] = {}
    empty: dict[str, str] = {}
    first: dict[str, int] = {}
    fields: dict[str, dict[str, str]] = {}

    def seen(did: str, ln: int) -> None:
        if did in first:
            raise duplicate_id(path, ln, did, first[did], "document")
        first[did] = ln

    for ln, did, text, meta in documents(source, policy, seen):
        if not text:
            empty[did] = f"line {ln} ({did!r})"
        corpus[did] = text
        if meta:
            fields[did] = meta
    if not corpus:
        raise DatasetError(path, NO_DOCUMENTS)
    return Texts(str(path), corpus, empty, fields)


def read_queries(source: TextFile, policy: EmptyPolicy = "skip") -> Texts:
    """Queries by id; an empty one is recorded, or refused under ``policy='error'``."""
    path = source.path
    queries: dict[str, str] = {}
    empty: dict[str, str] = {}
    first: dict[str, int] = {}
    fields: dict[str, dict[str, str]] = {}
    for ln, obj in records(source):
        qid = id_field(path, ln, obj, "query")
        if qid in queries:
            raise duplicate_id(path, ln, qid, first[qid], "query")
        text = text_field(path, ln, obj, "text", "query").strip()
        if not text:
            if policy == "error":
                raise DatasetError(
                    path,
                    f"query {qid!r} has empty text; give it text or drop it (--empty-queries "
                    "skip drops it, keep encodes it as the empty string)",
                    ln,
                )
            empty[qid] = f"line {ln} ({qid!r})"
        queries[qid] = text
        first[qid] = ln
        meta = metadata(obj) if len(obj) > 2 else None
        if meta:
            fields[qid] = meta
    if not queries:
        raise DatasetError(path, "no queries; the file holds no JSON lines")
    return Texts(str(path), queries, empty, fields)


def _present(d: Path) -> str:
    try:
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in d.iterdir())
    except OSError:
        return "(cannot list it)"
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "") if names else "(empty)"


def _require(root: Path, name: str, warnings: list[str]) -> Path:
    found, notes = find_variant(root / name)
    warnings.extend(notes)
    if found is None:
        nested = sorted(p.parent.name for p in root.glob(f"*/{name}*"))
        hint = f"; it is one level down: pass --dataset {root / nested[0]}" if nested else ""
        raise DatasetError(
            root / name, f"file not found (nor {name}.gz/.bz2/.xz); {_LAYOUT}; {root} holds: {_present(root)}{hint}"
        )
    if found.is_dir():
        raise DatasetError(found, f"is a directory, expected a file; {_LAYOUT}")
    return found


def find_qrels(root: Path, split: str) -> Path:
    """``qrels/<split>.<tsv|trec|qrels|txt>``, possibly compressed."""
    qdir = root / "qrels"
    for suffix in QRELS_SUFFIXES:
        found, _ = find_variant(qdir / f"{split}{suffix}")
        if found is not None and found.is_file():
            return found
    if not qdir.is_dir():
        raise DatasetError(qdir, f"no qrels directory; {_LAYOUT}, or pass --qrels FILE")
    present = sorted(
        {Path(logical_name(p)).stem for p in qdir.iterdir() if Path(logical_name(p)).suffix in QRELS_SUFFIXES}
    )
    raise DatasetError(qdir, f"no qrels for split {split!r}; splits present: {present or 'none'}")


def qrels_file(path: Path) -> Path:
    """A qrels file named explicitly (``--qrels``): it must exist (or a compressed sibling) and be a file."""
    if path.is_dir():
        try:
            inside = sorted(p.name for p in path.iterdir() if Path(logical_name(p)).suffix in QRELS_SUFFIXES)[:5]
        except OSError:
            inside = []
        hint = f" (it holds {', '.join(inside)})" if inside else ""
        raise DatasetError(
            path,
            f"--qrels names a directory{hint}; pass the qrels file itself, or drop --qrels and "
            "use --split to pick qrels/<split>.tsv",
        )
    found, _ = find_variant(path)
    if found is None:
        raise DatasetError(path, "qrels file not found; check the --qrels path (a BEIR TSV with header or TREC qrels)")
    return found


def load_beir(
    root: Path,
    split: str = "test",
    qrels_path: Path | None = None,
    *,
    empty_docs: EmptyPolicy = "keep",
    empty_queries: EmptyPolicy = "skip",
    on_disk: bool = False,
    spool_dir: Path | None = None,
    index_dir: Path | None = None,
) -> Dataset:
    """``on_disk`` leaves the corpus texts on disk (:mod:`.ondisk`; a compressed corpus is decompressed
    once to a spool file in ``spool_dir``; a plain one's index is kept in ``index_dir`` and reused while its
    bytes stay the same, :mod:`.corpusindex`); queries and qrels are read into memory either way."""
    warnings: list[str] = []
    corpus_path = _require(root, "corpus.jsonl", warnings)
    queries_path = _require(root, "queries.jsonl", warnings)
    qpath = qrels_file(qrels_path) if qrels_path is not None else find_qrels(root, split)
    sources = [TextFile(corpus_path), TextFile(queries_path), TextFile(qpath)]
    if on_disk:
        from .ondisk import read_corpus_on_disk

        corpus = read_corpus_on_disk(sources[0], empty_docs, spool_dir, index_dir)
    else:
        corpus = read_corpus(sources[0], empty_docs)
    queries = read_queries(sources[1], empty_queries)
    judgements = read_qrels(sources[2])
    files = {(str(s.path.relative_to(root)) if s.path.is_relative_to(root) else str(s.path)): s.sha256 for s in sources}
    return assemble(
        name=root.resolve().name,
        fmt="beir",
        split=split,
        qrels_path=qpath,
        corpus=corpus,
        queries=queries,
        judgements=judgements,
        files=files,
        empty_docs=empty_docs,
        empty_queries=empty_queries,
        warnings=warnings,
    )
