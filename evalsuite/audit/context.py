"""What the audit's checks share (the audit family's :class:`~evalsuite.checks.CheckContext`):
the open store, the prepared reference (model, contract, dataset), one pass over the stored vectors, the
sampled rows' reference vectors, and both sides' retrieval. Each is computed once, on first use, by whichever
thread asks first (:meth:`AuditContext.shared`); :meth:`AuditContext.prefetch` starts the model load and the
sample's encode in a background thread, so they overlap the pass over the vectors."""

from __future__ import annotations

from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..base.memo import Memo
from ..checks.detection import DETECT_CONFIDENCE
from .scan import Scan, sample_rows, sample_size, scan
from .source import RowIds

if TYPE_CHECKING:
    from ..encode.base import Encoder
    from ..encode.contract_encoder import ContractEncoder
    from ..encode.http import Deadline
    from ..retrieval.search import Ranking
    from ..run.prepared import Prepared
    from .settings import AuditSettings
    from .source import IndexInfo, IndexSource

T = TypeVar("T")
DEADLINE_WHAT = "the audit's deadline"


@dataclass(frozen=True)
class Fidelity:
    """The sampled rows against the reference vectors of their chunks' texts."""

    rows: np.ndarray  # sampled rows whose chunk id the corpus knows
    ids: tuple[str, ...]
    cosine: np.ndarray  # stored vs reference, per row
    stored: np.ndarray
    reference: np.ndarray
    skipped_unknown: int  # sampled rows whose id the corpus does not know (the ids check names them)


@dataclass(frozen=True)
class IndexRetrieval:
    """The labelled queries searched through the index as deployed and by its exact search."""

    result_metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    deployed: Ranking
    exact: Ranking


@dataclass
class AuditContext:
    settings: AuditSettings
    source: IndexSource
    prepared: Prepared
    deadline: Deadline
    encoder: Callable[[], Encoder]  # the pinned reference's raw encoder (pooled vectors), loaded once
    manifest: Path | None = None
    query_encoder: Callable[[], ContractEncoder] | None = None  # --endpoint: the production query path
    role: str = "index"  # "index" or "baseline" (cutover)
    _memo: Memo = field(default_factory=Memo)
    _background: ThreadPoolExecutor | None = None

    def deadline_passed(self) -> bool:
        return self.deadline.expired()

    def shared(self, key: str, make: Callable[[], T]) -> T:
        """``make()``, computed once: a second caller (in any thread) waits for the first one's result. A failure
        is raised to every caller waiting for it and not kept: the next caller computes again."""
        return self._memo.get(key, make)

    def prefetch(self) -> None:
        """Start, in one background thread, what the fidelity check needs beside the pass over the stored vectors:
        the reference model loaded and, when the store names its rows' chunk ids without streaming their vectors
        (:class:`~.source.RowIds`: a FAISS sidecar), the sampled rows' reference vectors encoded. They are the
        values computed in order (the same texts, in one call); an error surfaces in the check that needs them."""
        if self._background is not None:
            return
        ids = None
        if isinstance(self.source, RowIds):
            try:
                rows = sample_rows(self.info().count, self.sample_plan()[0], self.settings.seed)
                ids = self._known(rows, self.source.ids_at(rows))[1]
            except Exception:  # only a head start: the fidelity check computes it again and reports the error
                ids = None
        self._background = ThreadPoolExecutor(1, thread_name_prefix="evalsuite-audit")
        self._background.submit(self.reference if ids is None else lambda: self._sample_reference(ids))

    def info(self) -> IndexInfo:
        return self.shared("info", self.source.info)

    def reference(self) -> ContractEncoder:
        from ..encode.contract_encoder import ContractEncoder

        return self.shared("reference", lambda: ContractEncoder(self.encoder(), self.prepared.contract))

    def queries(self) -> ContractEncoder:
        return self.query_encoder() if self.query_encoder is not None else self.reference()

    @property
    def corpus_ids(self) -> Collection[str]:
        """The corpus's chunk ids, for membership and their count (a corpus on disk answers from its id index)."""
        return self.prepared.dataset.corpus.keys()

    def sample_plan(self) -> tuple[int, bool]:
        """(rows audited for fidelity, whether that is every row)."""
        count = self.info().count
        if self.settings.audit_all:
            return count, True
        n = sample_size(self.settings.detect, DETECT_CONFIDENCE, count)
        return n, n >= count

    def scan(self) -> Scan:
        def make() -> Scan:
            n, _ = self.sample_plan()
            rows = sample_rows(self.info().count, n, self.settings.seed)
            return scan(self.source, rows, self.settings.scan_rows)

        return self.shared("scan", make)

    def reference_vectors(self, ids: list[str]) -> np.ndarray:
        """The reference vectors of these chunks' texts under the contract (finalized: cut, normalized)."""
        corpus = self.prepared.dataset.corpus
        texts = [corpus[i] for i in ids]
        if not texts:
            return np.zeros((0, self.prepared.contract.dim), np.float32)
        return np.asarray(self.reference().embed_documents(texts), dtype=np.float32)

    def _known(self, rows: np.ndarray, ids: Collection[str]) -> tuple[list[int], tuple[str, ...]]:
        """Of the sampled ``rows`` (with their chunk ``ids``): the positions whose id the corpus knows, and those ids."""
        known = self.corpus_ids
        keep = [j for j, cid in enumerate(ids) if cid in known]
        listed = list(ids)
        return keep, tuple(listed[j] for j in keep)

    def _sample_reference(self, ids: tuple[str, ...]) -> tuple[tuple[str, ...], np.ndarray]:
        return self.shared("sample_reference", lambda: (ids, self.reference_vectors(list(ids))))

    def fidelity(self) -> Fidelity:
        def make() -> Fidelity:
            from ..checks.measure import row_cosine

            s = self.scan()
            keep, ids = self._known(s.sample_rows, s.ids.take(s.sample_rows))
            rows = s.sample_rows[keep]
            stored = s.sample_vectors[keep]
            encoded, ref = self._sample_reference(ids)
            if encoded != ids:  # the stream named other rows than the store did up front (it changed meanwhile)
                ref = self.reference_vectors(list(ids))
            if stored.shape[1] != ref.shape[1]:
                cos = np.full(len(ids), np.nan)
            else:
                cos = row_cosine(stored, ref)
            return Fidelity(rows, ids, cos, stored, ref, len(s.sample_rows) - len(keep))

        return self.shared("fidelity", make)

    def reference_retrieval(self) -> IndexRetrieval:
        """The reference's exact search over the reference vectors of the whole corpus (encoded in corpus order,
        as an honest ingest job would), scored like the index's."""

        def make() -> IndexRetrieval:
            from ..retrieval.search import search
            from ..scoring.metrics import evaluate, search_depth

            c = self.prepared.contract
            metrics = list(self.prepared.spec.metrics)
            depth = max(search_depth(metrics), self.settings.k)
            doc_ids = [str(d) for d in self.prepared.dataset.doc_ids]
            docs = self.shared("corpus_vectors", lambda: self.reference_vectors(doc_ids))
            qids, q = self.query_vectors(reference=True)
            ranking = search(q, docs, query_ids=qids, doc_ids=doc_ids, k=depth, similarity=c.similarity)
            agg, per_query = evaluate(self.prepared.dataset.qrels, ranking, metrics)
            return IndexRetrieval(agg, per_query, ranking, ranking)

        return self.shared("reference_retrieval", make)

    def query_vectors(self, *, reference: bool = False) -> tuple[list[str], np.ndarray]:
        """The labelled queries' vectors: the reference's, or the production query path's (``--endpoint``)."""

        def make() -> tuple[list[str], np.ndarray]:
            ds = self.prepared.dataset
            qids = [str(q) for q in ds.query_ids]
            enc = self.reference() if reference else self.queries()
            return qids, np.asarray(enc.embed_queries([ds.queries[q] for q in qids]), np.float32)

        if reference or self.query_encoder is None:
            return self.shared("reference_queries", make)
        return self.shared("served_queries", make)

    def index_retrieval(self) -> IndexRetrieval:
        """The queries through the index's own search (as deployed) and its exact search, the deployed one scored."""

        def make() -> IndexRetrieval:
            from ..scoring.metrics import evaluate, search_depth

            metrics = list(self.prepared.spec.metrics)
            depth = max(search_depth(metrics), self.settings.k)
            qids, q = self.query_vectors()
            deployed = _ranking(qids, self.source.search(q, depth, exact=False))
            exact = _ranking(qids, self.source.search(q, depth, exact=True))
            agg, per_query = evaluate(self.prepared.dataset.qrels, deployed, metrics)
            return IndexRetrieval(agg, per_query, deployed, exact)

        return self.shared("index_retrieval", make)

    def close(self) -> None:
        if self._background is not None:
            self._background.shutdown(wait=False, cancel_futures=True)
        self.source.close()


def _ranking(qids: list[str], hits: list[list[tuple[str, float]]]) -> Ranking:
    """A :class:`~evalsuite.retrieval.search.Ranking` of the store's hits; an id retrieved twice (a duplicated row)
    counts once, at its best place."""
    from ..retrieval.search import Ranking

    scores: dict[str, dict[str, float]] = {}
    for qid, row in zip(qids, hits, strict=True):
        seen: dict[str, float] = {}
        for cid, score in row:
            if cid not in seen:
                seen[cid] = score
        scores[qid] = seen
    return Ranking.from_scores(scores)
