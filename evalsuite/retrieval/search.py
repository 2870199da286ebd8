"""Exact nearest-neighbour search with FAISS, in one documented tie order.

**The tie order.** Within a query, documents are ranked by score descending (for L2, nearest
first: the score is the negated squared distance), and documents with *equal* scores by document
id *descending* (code-point order, i.e. ``strcmp`` on UTF-8 bytes). This is ``trec_eval``'s own
order (``comp_sim_docno`` in ``form_res_rels.c``), which ``pytrec_eval``, ``ir_measures``, BEIR and
MTEB inherit: the same similarities scored by any of them rank tied documents exactly as here.

The order is enforced end to end:

* :func:`search` selects the top ``k`` in that order over the *whole* corpus, also when a group of
  tied documents straddles the cut-off (it widens the FAISS fetch until the tie group is complete);
* :class:`Ranking` keeps each query's documents in that order with their raw (float32) scores;
* ranx never sees the raw scores: :meth:`Ranking.rank_scores` gives it ``depth - rank`` (distinct
  per query), so its unstable descending sort cannot reorder ties, and every metric and per-query
  score is computed on exactly the ranking written out;
* ``run.trec`` (:mod:`evalsuite.reports.trec`) writes the raw scores lowered by the fewest float32
  steps that make them strictly decreasing within a query, so every tool reads the written order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..base.errors import ContractError, SpecError

if TYPE_CHECKING:
    import faiss

_TIE_MARGIN = 16
_INDEX_KINDS = {"cosine": "IndexFlatIP", "dot": "IndexFlatIP", "l2": "IndexFlatL2"}


def tie_order_key(doc_id: str, score: float) -> tuple[float, _Desc]:
    """Sort key of the documented order: ``sorted(hits, key=lambda h: tie_order_key(*h))`` is best first."""
    return (-score, _Desc(doc_id))


@dataclass(frozen=True)
class _Desc:
    """A string that sorts in descending code-point order."""

    text: str

    def __lt__(self, other: _Desc) -> bool:
        return self.text > other.text


@dataclass(frozen=True)
class Ranking(Mapping[str, Mapping[str, float]]):
    """Per query, the retrieved documents best first in the documented tie order, with raw scores.

    Read as a mapping it is ``{qid: {docid: score}}`` with each inner dict in rank order.
    ``depth`` is the most documents a query holds (the search's ``k``, or the corpus size when that
    is smaller) and ``corpus_size`` how many documents were searched (both ``None`` when the ranking
    was built from scores rather than by :func:`search`).
    """

    doc_ids: Mapping[str, tuple[str, ...]]
    scores: Mapping[str, tuple[float, ...]]
    depth: int | None = None
    corpus_size: int | None = None

    def __post_init__(self) -> None:
        if self.doc_ids.keys() != self.scores.keys():
            raise ContractError("Ranking: doc_ids and scores must hold the same queries")
        for qid, docs in self.doc_ids.items():
            s = np.asarray(self.scores[qid], dtype=np.float64)
            if len(docs) != len(s):
                raise ContractError(f"Ranking: query {qid!r} has {len(docs)} documents but {len(s)} scores")
            if len(set(docs)) != len(docs):
                raise ContractError(f"Ranking: query {qid!r} lists a document twice")
            if np.isnan(s).any():
                raise ContractError(f"Ranking: query {qid!r} has a NaN score; NaN has no place in a ranking")
            ties = np.flatnonzero(s[1:] == s[:-1])
            if (s[1:] > s[:-1]).any() or any(docs[t + 1] > docs[t] for t in ties):
                raise ContractError(
                    f"Ranking: query {qid!r} is not in the tie order (score descending, then "
                    "document id descending); build it with Ranking.from_scores"
                )

    @classmethod
    def from_scores(cls, scores: Mapping[str, Mapping[str, float]]) -> Ranking:
        """Order ``{qid: {docid: score}}`` (any inner order) by the documented tie order."""
        docs: dict[str, tuple[str, ...]] = {}
        values: dict[str, tuple[float, ...]] = {}
        for qid, hits in scores.items():
            ordered = sorted(((str(d), float(s)) for d, s in hits.items()), key=lambda h: tie_order_key(*h))
            docs[qid] = tuple(d for d, _ in ordered)
            values[qid] = tuple(s for _, s in ordered)
        return cls(docs, values)

    def __getitem__(self, qid: str) -> dict[str, float]:
        return dict(zip(self.doc_ids[qid], self.scores[qid], strict=False))

    def __iter__(self) -> Iterator[str]:
        return iter(self.doc_ids)

    def __len__(self) -> int:
        return len(self.doc_ids)

    def top(self, qid: str, k: int) -> tuple[str, ...]:
        """The first ``k`` document ids of ``qid`` (empty for a query without results)."""
        return self.doc_ids.get(qid, ())[:k]

    def rank_scores(self, qid: str) -> dict[str, float]:
        """Scores that encode the rank and nothing else (``n - rank``, rank from 0): what ranx scores."""
        docs = self.doc_ids[qid]
        return {d: float(len(docs) - r) for r, d in enumerate(docs)}


def index_kind(similarity: str) -> str:
    if similarity not in _INDEX_KINDS:
        raise SpecError(f"similarity {similarity!r} is not valid; choose one of {', '.join(_INDEX_KINDS)}")
    return _INDEX_KINDS[similarity]


def build_index(doc_vectors: np.ndarray, similarity: str) -> faiss.Index:
    import faiss

    index: faiss.Index = getattr(faiss, index_kind(similarity))(doc_vectors.shape[1])
    index.add(np.ascontiguousarray(doc_vectors, dtype=np.float32))
    return index


def search(
    query_vectors: np.ndarray,
    doc_vectors: np.ndarray,
    *,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    k: int,
    similarity: str = "cosine",
) -> Ranking:
    """The top ``k`` documents of every query over the whole corpus, in the documented tie order.

    Scores are similarities (higher is better): inner products for ``cosine``/``dot``, the negated
    squared distance for ``l2``. A corpus smaller than ``k`` gives every document.
    """
    if k < 1:
        raise SpecError(f"search depth k={k} must be >= 1")
    if len(query_ids) != len(query_vectors) or len(doc_ids) != len(doc_vectors):
        raise ContractError(
            f"search: {len(query_vectors)} query vectors for {len(query_ids)} query ids and "
            f"{len(doc_vectors)} document vectors for {len(doc_ids)} document ids; they must match"
        )
    if len(set(doc_ids)) != len(doc_ids):
        raise ContractError("search: document ids are not unique; the corpus must give each document one id")
    n = len(doc_ids)
    k = min(k, n)
    qids = [str(q) for q in query_ids]
    if k == 0:
        return Ranking({q: () for q in qids}, {q: () for q in qids}, depth=0, corpus_size=0)
    ids = np.asarray(doc_ids, dtype=object)
    # position of each document in descending-id order: the secondary sort key
    desc_rank = np.empty(n, dtype=np.int64)
    desc_rank[sorted(range(n), key=lambda j: _Desc(str(doc_ids[j])))] = np.arange(n)
    index = build_index(doc_vectors, similarity)
    queries = np.ascontiguousarray(query_vectors, dtype=np.float32)
    docs: dict[str, tuple[str, ...]] = {}
    values: dict[str, tuple[float, ...]] = {}
    todo = np.arange(len(qids))
    fetch = min(k + _TIE_MARGIN, n)
    while todo.size:
        scores, idx = index.search(queries[todo], fetch)
        if similarity == "l2":
            scores = 0.0 - scores  # not -scores: a distance of 0 must not print as -0
        # the k-th score equal to the last fetched one: its tie group may go on beyond the fetch
        open_ = scores[:, k - 1] <= scores[:, fetch - 1] if fetch < n else np.zeros(len(todo), dtype=bool)
        done = ~open_
        s, i = scores[done], idx[done]
        found = i >= 0  # FAISS leaves -1 where a score is NaN: such documents are not retrieved
        primary = np.where(found, -s, np.inf)
        order = np.lexsort((desc_rank[np.where(found, i, 0)], primary), axis=-1)[:, :k]
        top_i = np.take_along_axis(i, order, axis=-1)
        top_s = np.take_along_axis(s, order, axis=-1)
        for row, qi in enumerate(todo[done]):
            keep = top_i[row] >= 0
            docs[qids[qi]] = tuple(str(d) for d in ids[top_i[row][keep]])
            values[qids[qi]] = tuple(top_s[row][keep].tolist())
        todo = todo[open_]
        fetch = min(2 * fetch, n)
    return Ranking({q: docs[q] for q in qids}, {q: values[q] for q in qids}, depth=k, corpus_size=n)
