"""The finishing step shared by every format: apply the empty-text policies, join the qrels with the
corpus and queries, explain any mismatch by side, and compute the dataset's identity."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from ..base.errors import DatasetError
from .files import logical_name
from .model import Dataset, DatasetIdentity, EmptyPolicy, LazyCorpus
from .qrels import Judgement


@dataclass(frozen=True)
class Texts:
    """Documents or queries by id in file order (a dict, or a corpus left on disk); ``empty`` maps each
    empty one to where it is."""

    source: str
    texts: Mapping[str, str]
    empty: dict[str, str] = field(default_factory=dict)
    fields: dict[str, dict[str, str]] = field(default_factory=dict)  # id -> metadata (records without any absent)


def dataset_sha256(files: Mapping[str, str], variant: Mapping[str, str] | None = None) -> str:
    """One digest over the files (by name without compression suffix) and the settings that changed the data."""
    h = hashlib.sha256()
    for name in sorted(files, key=lambda n: logical_name(Path(n))):
        h.update(f"{Path(name).parent / logical_name(Path(name))}\0{files[name]}\n".encode())
    for key in sorted(variant or {}):
        h.update(f"setting:{key}={(variant or {})[key]}\n".encode())
    return h.hexdigest()


def _examples(ids: Iterable[str], n: int = 3) -> str:
    return ", ".join(repr(i) for i in islice(ids, n))


def _unknown_report(side: str, misses: list[tuple[str, int]], total: int, known: Texts) -> str:
    shown = "; ".join(f"{i!r} (line {ln})" for i, ln in misses[:3])
    return (
        f"{len(misses)} of {total} judgement(s) name {side} ids absent from {known.source} (e.g. {shown}); "
        f"{known.source} has ids like {_examples(known.texts) or '(none)'}"
    )


def assemble(
    *,
    name: str,
    fmt: str,
    split: str,
    qrels_path: Path,
    corpus: Texts,
    queries: Texts,
    judgements: Iterable[Judgement],
    files: Mapping[str, str],
    empty_docs: EmptyPolicy,
    empty_queries: EmptyPolicy,
    warnings: Iterable[str] = (),
) -> Dataset:
    """Join qrels with corpus and queries: count unknown ids, drop queries with nothing relevant."""
    notes = list(warnings)
    judgements = list(judgements)
    docs = _apply_policy(corpus, empty_docs, "document", notes)
    qs = _apply_policy(queries, empty_queries, "query", notes)
    skipped_docs = set(corpus.empty) if empty_docs == "skip" else set()
    skipped_queries = set(queries.empty) if empty_queries == "skip" else set()
    qrels: dict[str, dict[str, int]] = {}
    lost: dict[str, int] = {}  # query -> relevant judgements dropped with skipped empty documents
    unknown_q: list[tuple[str, int]] = []
    unknown_d: list[tuple[str, int]] = []
    dropped_empty = negative = 0
    for qid, did, rel, ln in judgements:
        if qid in skipped_queries or did in skipped_docs:
            dropped_empty += 1
            if did in skipped_docs and rel > 0:
                lost[qid] = lost.get(qid, 0) + 1
            continue
        if qid not in qs:
            unknown_q.append((qid, ln))
            continue
        if did not in docs:
            unknown_d.append((did, ln))
            continue
        if rel < 0:
            negative, rel = negative + 1, 0
        qrels.setdefault(qid, {})[did] = rel
    mismatch = [
        _unknown_report("query", unknown_q, len(judgements), queries) if unknown_q else "",
        _unknown_report("document", unknown_d, len(judgements), corpus) if unknown_d else "",
    ]
    mismatch = [m for m in mismatch if m]
    kept = {qid: q for qid, q in qrels.items() if any(r > 0 for r in q.values())}
    kept_queries = {qid: text for qid, text in qs.items() if qid in kept}
    if not kept_queries:
        raise DatasetError(qrels_path, _why_nothing_left(split, judgements, mismatch, qrels, lost, queries))
    if mismatch:
        notes.append(f"{qrels_path}: ignored judgements: " + "; ".join(mismatch))
    if negative:
        notes.append(f"{qrels_path}: {negative} judgement(s) with negative relevance read as 0 (judged, not relevant)")
    dropped = len(qs) - len(kept_queries)
    lost_queries = sum(1 for q in lost if q in qs and q not in kept)
    if dropped:
        extra = (
            f", {lost_queries} of them because their relevant documents were empty and skipped" if lost_queries else ""
        )
        notes.append(
            f"{dropped} of {len(qs)} queries have no relevant judged document in split {split!r} and were "
            f"dropped{extra}"
        )
    variant: dict[str, str] = {}
    if corpus.empty:
        variant["empty_docs"] = empty_docs
    if queries.empty:
        variant["empty_queries"] = empty_queries
    identity = DatasetIdentity(
        name=name,
        format=fmt,
        split=split,
        sha256=dataset_sha256(files, variant),
        files=dict(files),
        n_documents=len(docs),
        n_queries=len(kept_queries),
        n_judgements=sum(len(kept[q]) for q in kept_queries),
        n_queries_dropped=dropped,
        n_unknown_qrels=len(unknown_q) + len(unknown_d),
        n_queries_file=len(queries.texts),
        empty_docs=empty_docs,
        empty_queries=empty_queries,
        n_empty_documents=len(corpus.empty),
        n_empty_queries=len(queries.empty),
        n_judgements_dropped_empty=dropped_empty,
        n_queries_dropped_empty_docs=lost_queries,
        n_negative_relevance=negative,
    )
    return Dataset(
        corpus=docs,
        queries=kept_queries,
        qrels={q: dict(kept[q]) for q in kept_queries},
        identity=identity,
        warnings=tuple(notes),
        query_fields={q: f for q, f in queries.fields.items() if q in kept_queries},
        doc_fields={d: f for d, f in corpus.fields.items() if d in docs},
    )


def _apply_policy(items: Texts, policy: EmptyPolicy, role: str, notes: list[str]) -> Mapping[str, str]:
    """The texts to evaluate under ``policy`` ('error' was enforced while reading), with a warning for empties."""
    n, total = len(items.empty), len(items.texts)
    if n and n == total:
        raise DatasetError(
            items.source,
            f"every {role} ({total}) has empty text; check that the text field is the "
            "one the file fills (BEIR: 'title' and 'text' for documents, 'text' for queries)",
        )
    if not n:
        return _kept(items.texts, ())
    where = ", ".join(items.empty[i] for i in list(items.empty)[:3]) + (", ..." if n > 3 else "")
    flag = "--empty-docs" if role == "document" else "--empty-queries"
    if policy == "keep":
        notes.append(
            f"{items.source}: {n} {role}(s) with empty text are encoded as the empty string, as BEIR and "
            f"MTEB do ({where}); {flag} skip drops them, {flag} error refuses them"
        )
        return _kept(items.texts, ())
    notes.append(
        f"{items.source}: {n} {role}(s) with empty text were skipped with their judgements ({where}); "
        f"{flag} keep encodes them as the empty string"
    )
    return _kept(items.texts, items.empty.keys())


def _kept(texts: Mapping[str, str], drop: Collection[str]) -> Mapping[str, str]:
    """``texts`` less ``drop``: a copy of a dict, or a corpus on disk filtered without reading a text."""
    if isinstance(texts, LazyCorpus):
        return texts.without(drop) if drop else texts
    return {i: t for i, t in texts.items() if i not in drop}


def _why_nothing_left(
    split: str,
    judgements: list[Judgement],
    mismatch: list[str],
    qrels: Mapping[str, Mapping[str, int]],
    lost: Mapping[str, int],
    queries: Texts,
) -> str:
    head = f"no query of split {split!r} has a relevant (score > 0) judged document"
    if not judgements:
        return f"{head}: the qrels file has no judgements; check that it is the right file"
    if mismatch:
        return (
            f"{head}: the qrels ids do not match: "
            + "; ".join(mismatch)
            + "; make the ids in the qrels and the corpus/queries the same"
        )
    if lost:
        return f"{head}: every relevant document is empty and was skipped; use --empty-docs keep"
    if not qrels:
        return (
            f"{head}: every judged query has empty text and was skipped ({len(queries.empty)} empty queries); "
            "use --empty-queries keep or give the queries text"
        )
    return f"{head}: every judgement has relevance <= 0; relevant documents need a score of 1 or more"
