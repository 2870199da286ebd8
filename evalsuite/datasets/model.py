"""The labelled retrieval dataset and its identity."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Literal, Protocol, runtime_checkable

EmptyPolicy = Literal["keep", "skip", "error"]
EMPTY_POLICIES: tuple[EmptyPolicy, ...] = ("keep", "skip", "error")
DEFAULT_EMPTY_DOCS: EmptyPolicy = "keep"
DEFAULT_EMPTY_QUERIES: EmptyPolicy = "skip"


@runtime_checkable
class LazyCorpus(Protocol):
    """A corpus whose texts stay on disk (:class:`~evalsuite.datasets.ondisk.OnDiskCorpus`): read
    sequentially a chunk at a time, or by id; filtered without reading a text."""

    def iter_chunks(self, size: int) -> Iterator[tuple[list[str], list[str]]]: ...

    def without(self, ids: Collection[str]) -> Mapping[str, str]: ...


@runtime_checkable
class IndexedIds(Protocol):
    """A corpus that holds its ids compactly (:class:`~evalsuite.datasets.ondisk.IndexedCorpus`): a sized,
    indexable sequence of them in corpus order, each decoded when asked for."""

    @property
    def id_sequence(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class DatasetIdentity:
    """What a result needs to say which data it was computed on.

    ``files`` maps each file read (as named on disk, e.g. ``corpus.jsonl.gz``) to the sha256 of its
    decompressed bytes; ``sha256`` digests those by name without compression suffix, plus each empty-text
    policy that applied to at least one text: compressing a file keeps the identity, skipping empty
    documents instead of keeping them changes it.
    """

    name: str
    format: str
    split: str
    sha256: str
    files: Mapping[str, str]
    n_documents: int
    n_queries: int
    n_judgements: int
    n_queries_dropped: int
    n_unknown_qrels: int
    n_queries_file: int
    empty_docs: EmptyPolicy = DEFAULT_EMPTY_DOCS
    empty_queries: EmptyPolicy = DEFAULT_EMPTY_QUERIES
    n_empty_documents: int = 0
    n_empty_queries: int = 0
    n_judgements_dropped_empty: int = 0
    n_queries_dropped_empty_docs: int = 0
    n_negative_relevance: int = 0

    def manifest_dict(self) -> dict[str, object]:
        """What an index manifest records about the data: which files, which split, which policies."""
        return {
            "name": self.name,
            "format": self.format,
            "split": self.split,
            "sha256": self.sha256,
            "empty_docs": self.empty_docs,
            "empty_queries": self.empty_queries,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "format": self.format,
            "split": self.split,
            "sha256": self.sha256,
            "files": dict(self.files),
            "policies": {"empty_docs": self.empty_docs, "empty_queries": self.empty_queries},
            "counts": {
                "documents": self.n_documents,
                "queries": self.n_queries,
                "judgements": self.n_judgements,
                "queries_in_file": self.n_queries_file,
                "queries_dropped_no_relevant": self.n_queries_dropped,
                "qrels_unknown_ids": self.n_unknown_qrels,
                "empty_documents": self.n_empty_documents,
                "empty_queries": self.n_empty_queries,
                "judgements_dropped_with_empty": self.n_judgements_dropped_empty,
                "queries_dropped_empty_documents": self.n_queries_dropped_empty_docs,
                "negative_relevance_as_zero": self.n_negative_relevance,
            },
        }


@dataclass(frozen=True)
class Dataset:
    """Documents and queries by id (in file order) and graded judgements.

    ``query_fields`` / ``doc_fields``: the metadata of a record beside its id and texts (e.g. a query's
    ``topic``), each value as a string (:func:`~evalsuite.datasets.records.metadata`); what slices group by.

    ``corpus`` is a dict, or in a chunked run a :class:`LazyCorpus` that reads each text from disk when
    asked: code that goes over every document uses :meth:`corpus_chunks`, never ``corpus.values()``.

    Only queries with at least one relevant (score > 0) judged document are kept. Empty documents and
    queries are kept (as the empty string), skipped or refused as ``identity.empty_docs`` /
    ``identity.empty_queries`` say; negative relevance reads as 0 (judged, not relevant).
    """

    corpus: Mapping[str, str]
    queries: Mapping[str, str]
    qrels: Mapping[str, Mapping[str, int]]
    identity: DatasetIdentity
    warnings: tuple[str, ...] = field(default=())
    query_fields: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # qid -> {field: value}
    doc_fields: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # docid -> {field: value}

    @property
    def doc_ids(self) -> Sequence[str]:
        """The document ids in corpus order: a new list, or for a corpus on disk its compact id index
        (:class:`~evalsuite.datasets.idindex.IdIndex`; ``doc_ids[i]`` decodes one id), never a list of
        all of them: what a chunked run searches and reports with."""
        if isinstance(self.corpus, IndexedIds):
            return self.corpus.id_sequence
        return list(self.corpus)

    def corpus_chunks(self, size: int) -> Iterator[tuple[list[str], list[str]]]:
        """``(ids, texts)`` of ``size`` documents at a time in corpus order; a corpus on disk is read
        sequentially, one chunk at a time, so only one chunk's texts are in memory."""
        if isinstance(self.corpus, LazyCorpus):
            yield from self.corpus.iter_chunks(size)
            return
        items = iter(self.corpus.items())
        while chunk := list(islice(items, size)):
            yield [i for i, _ in chunk], [t for _, t in chunk]

    @property
    def query_ids(self) -> list[str]:
        return list(self.queries)
