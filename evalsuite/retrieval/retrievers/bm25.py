"""BM25 over the corpus texts with bm25s, ranked in the documented tie order.

The lexical contract is the retrieval spec's: bm25s's own tokenizer (``bm25s.tokenize``: lower-cased,
scikit-learn's ``\\b\\w\\w+\\b`` words), its stop-word list, an optional PyStemmer stemmer, ``k1``, ``b`` and
the variant (``method``). The defaults are bm25s's (``stopwords="en"``, no stemmer, Lucene, ``k1`` 1.5, ``b``
0.75), so a run compared with bm25s directly ranks the same documents with the same scores.

Scores come from ``BM25.get_scores_from_ids`` (bm25s's scoring of every document); the top ``k`` are chosen
here, in the order of :mod:`evalsuite.retrieval.search` (score descending, then document id descending). A
document that shares no term with the query is not retrieved, as an inverted index behaves (for ``bm25l`` and
``bm25+`` too, where bm25s gives every document a non-occurrence score): a query may retrieve fewer than
``k``. The index is built once per corpus and settings within a process (a sweep's bm25 and hybrid cells
share it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...base.errors import MissingExtra, SpecError
from ..search import Ranking, _Desc

if TYPE_CHECKING:
    from .value import RetrievalInputs, RetrievalSpec


@dataclass(frozen=True)
class BM25Settings:
    k1: float = 1.5
    b: float = 0.75
    method: str = "lucene"
    stopwords: str = "en"
    stemmer: str = "none"

    @classmethod
    def of(cls, spec: RetrievalSpec) -> BM25Settings:
        v = spec.values
        return cls(float(v["k1"]), float(v["b"]), str(v["method"]), str(v["stopwords"]), str(v["stemmer"]))  # type: ignore[arg-type]


def _stemmer(name: str) -> Any:
    if name == "none":
        return None
    try:
        import Stemmer
    except ImportError:
        raise MissingExtra(
            f"bm25_stemmer {name!r} needs PyStemmer, which is not installed: pip install PyStemmer "
            "(or set bm25_stemmer = none)"
        ) from None
    algorithms = Stemmer.algorithms()
    if name not in algorithms:
        raise SpecError(
            f"bm25_stemmer {name!r} is not a PyStemmer algorithm; choose one of {', '.join(algorithms)} or none"
        )
    return Stemmer.Stemmer(name)


@dataclass
class BM25Index:
    """A built bm25s index over one corpus, with what ranks its hits in the tie order."""

    retriever: Any
    settings: BM25Settings
    desc_rank: np.ndarray  # each document's position in descending-id order
    build_seconds: float
    vocabulary: int

    def score_bytes(self) -> int:
        """Bytes of bm25s's precomputed score matrix (CSR: data, indices, indptr), the index's bulk (its
        vocabulary's dict of words aside)."""
        return int(sum(np.asarray(self.retriever.scores[k]).nbytes for k in ("data", "indices", "indptr")))

    def tokenize_queries(self, texts: Sequence[str]) -> list[list[str]]:
        import bm25s

        stop = [] if self.settings.stopwords == "none" else self.settings.stopwords
        tokens = bm25s.tokenize(
            list(texts), stopwords=stop, stemmer=_stemmer(self.settings.stemmer), return_ids=False, show_progress=False
        )
        return [list(t) for t in tokens]

    def top(self, tokens: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """The top ``k`` documents sharing a term with the query (document positions, bm25s's scores), in the tie
        order: only the candidates at or above the k-th score are sorted."""
        r = self.retriever
        ids = r.get_tokens_ids(list(tokens))
        if not ids:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        indptr, indices = r.scores["indptr"], r.scores["indices"]
        shares = np.zeros(len(self.desc_rank), dtype=bool)
        for t in set(ids):
            shares[indices[indptr[t] : indptr[t + 1]]] = True
        matched = np.flatnonzero(shares)
        s = r.get_scores_from_ids(ids)[matched]
        if len(matched) > k:  # keep the k best and every document tied with the k-th
            kth = s[np.argpartition(-s, k - 1)[k - 1]]
            keep = s >= kth
            matched, s = matched[keep], s[keep]
        order = np.lexsort((self.desc_rank[matched], -s.astype(np.float64)))[:k]
        return matched[order], s[order]


_BUILT: dict[tuple[str, BM25Settings], BM25Index] = {}


def build_index(settings: BM25Settings, inputs: RetrievalInputs) -> BM25Index:
    """The bm25s index of ``inputs``' corpus under ``settings``, built once per process (the last one kept)."""
    key = (inputs.corpus_key, settings)
    if key in _BUILT:
        return _BUILT[key]
    import bm25s

    t0 = time.perf_counter()
    stop = [] if settings.stopwords == "none" else settings.stopwords
    corpus = bm25s.tokenize(
        list(inputs.doc_texts()), stopwords=stop, stemmer=_stemmer(settings.stemmer), show_progress=False
    )
    retriever = bm25s.BM25(k1=settings.k1, b=settings.b, method=settings.method)
    retriever.index(corpus, show_progress=False)
    doc_ids = inputs.doc_ids
    n = len(doc_ids)
    desc_rank = np.empty(n, dtype=np.int64)
    desc_rank[sorted(range(n), key=lambda j: _Desc(str(doc_ids[j])))] = np.arange(n)
    built = BM25Index(retriever, settings, desc_rank, time.perf_counter() - t0, len(corpus.vocab))
    _BUILT.clear()
    _BUILT[key] = built
    return built


def bm25_ranking(settings: BM25Settings, inputs: RetrievalInputs, k: int) -> tuple[Ranking, dict[str, object]]:
    """The top ``k`` documents per query by BM25 (only documents sharing a term), and the manifest entry."""
    if k < 1:
        raise SpecError(f"search depth k={k} must be >= 1")
    index = build_index(settings, inputs)
    t0 = time.perf_counter()
    doc_ids = inputs.doc_ids
    qids = [str(q) for q in inputs.query_ids]
    docs: dict[str, tuple[str, ...]] = {}
    values: dict[str, tuple[float, ...]] = {}
    short = 0
    for qid, tokens in zip(qids, index.tokenize_queries(inputs.query_texts()), strict=True):
        top, s = index.top(tokens, k)
        docs[qid] = tuple(str(doc_ids[j]) for j in top)
        values[qid] = tuple(float(x) for x in s)
        short += len(top) < min(k, len(doc_ids))
    entry: dict[str, object] = {
        "documents": len(doc_ids),
        "vocabulary": index.vocabulary,
        "build_seconds": round(index.build_seconds, 4),
        "search_seconds": round(time.perf_counter() - t0, 4),
        "queries_short": short,  # queries that retrieved fewer than k documents (no more shared a term)
        "index_bytes_per_document": round(index.score_bytes() / max(1, len(doc_ids)), 2),
    }
    return Ranking(docs, values, depth=min(k, len(doc_ids)), corpus_size=len(doc_ids)), entry
