"""On-disk cache of reranker scores: the embedding cache's shards and checksummed segments
(:mod:`evalsuite.encode.cache`), keyed by the reranker contract.

Key (:class:`ScoreKey`, one shard each): the pinned reranker (model and tokenizer revision) and every
contract field that changes a score: the pair template, max length and truncation (what the model
reads), the dtype (how it computes) and the activation (what is applied to its logit). The model's
name is not part of it (the revision pins the weights). A row: a 16-byte hash of the rendered pair
(``RerankerContract.render`` of the query and document texts, so a pair encoding and a one-text
template never share a row) and its float64 score, stored bit for bit as two float32 words, with the
pair's token count and truncation flag, so a warm run reports them without a tokenizer.

:class:`CachedReranker` serves a batch from the cache and builds the local reference only for the
pairs it lacks: a warm run loads no model and imports neither torch nor transformers, and its scores
are the cold run's, bit for bit. A corrupt segment is reported (``CacheCorruptionWarning`` and the
``corrupt`` counter), deleted, and its pairs are scored again. Concurrent writers, compaction and
the atomic writes are the embedding cache's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

from ..encode.cache import CacheStats, EmbeddingCache, text_hash
from .local import RerankStats, ScoredPairs

if TYPE_CHECKING:
    from .contract import RerankerContract
    from .local import LocalReranker

SCORE_KIND = "rerank-score"
_WORDS = 2  # a float64 score is stored as two float32 words (the segment's row type), bit for bit


@dataclass(frozen=True)
class ScoreKey:
    """Everything that changes a reranker's score of a pair, except the pair itself."""

    model_revision: str
    tokenizer_revision: str
    activation: str
    template: str
    max_length: int
    truncation: str
    dtype: str
    kind: str = SCORE_KIND  # never equal to an embedding shard's key
    dim: int = _WORDS

    @classmethod
    def of(cls, contract: RerankerContract) -> ScoreKey:
        return cls(**{f.name: getattr(contract, f.name) for f in fields(cls) if f.name not in ("kind", "dim")})

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:32]


def pair_hash(contract: RerankerContract, query: str, document: str) -> bytes:
    """The row of a pair: the hash of what the contract renders (the two texts of a pair encoding, or one text)."""
    return text_hash(json.dumps(contract.render(query, document)))


class ScoreCache(EmbeddingCache):
    """Reranker scores on disk, by :class:`ScoreKey` and :func:`pair_hash` (the embedding cache's files)."""

    NAME = "reranker score cache"
    ROWS = "scores"

    def lookup_scores(self, key: ScoreKey, hashes: Sequence[bytes]) -> tuple[ScoredPairs, np.ndarray]:
        """Per row: the score, token count and truncation flag stored for it (0, -1, False where none is);
        and the mask of the rows found."""
        got = self.lookup_rows(key, hashes)
        scores = np.ascontiguousarray(got.vectors).view(np.float64).reshape(len(hashes))
        return ScoredPairs(scores.copy(), got.tokens, got.truncated), got.found

    def store_scores(self, key: ScoreKey, hashes: Sequence[bytes], rows: ScoredPairs) -> None:
        words = np.ascontiguousarray(rows.scores, dtype=np.float64).view(np.float32).reshape(len(hashes), _WORDS)
        self.store(key, hashes, words, rows.tokens, rows.truncated)


@dataclass
class CachedRerankStats:
    """What the two-stage timing records: pairs through the model, pairs from the cache, the cache counters."""

    model: RerankStats
    cache: CacheStats
    model_loaded: bool = False
    cached_pairs: int = 0
    cached_tokens: int = 0
    cached_truncated: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            **self.model.to_dict(),
            "model_loaded": self.model_loaded,
            "cached_pairs": self.cached_pairs,
            "cached_tokens": self.cached_tokens,
            "cached_truncated": self.cached_truncated,
            "cache": {"hits": self.cache.hits, "misses": self.cache.misses, "corrupt": self.cache.corrupt},
        }


class CachedReranker:
    """A pair scorer that serves scores from a :class:`ScoreCache` and runs the local reference (built by
    ``factory`` on the first miss, never before) only for the distinct pairs it lacks."""

    def __init__(self, cache: ScoreCache, contract: RerankerContract, factory: Callable[[], LocalReranker]) -> None:
        self.cache = cache
        self.contract = contract
        self.key = ScoreKey.of(contract)
        self._factory = factory
        self._reference: LocalReranker | None = None
        self._served = CachedRerankStats(RerankStats(), cache.stats)

    @property
    def model_loaded(self) -> bool:
        return self._reference is not None

    @property
    def reference(self) -> LocalReranker:
        """The local reference, built on first use (a warm cache never builds it)."""
        if self._reference is None:
            self._reference = self._factory()
        return self._reference

    @property
    def stats(self) -> CachedRerankStats:
        s = self._served
        s.model = self._reference.stats if self._reference is not None else RerankStats()
        s.model_loaded = self.model_loaded
        return s

    def score(self, pairs: Sequence[tuple[str, str]], ids: Sequence[str] | None = None) -> np.ndarray:
        """Each pair's score after the contract's activation (float64, input order), as the reference gives it."""
        hashes = [pair_hash(self.contract, q, d) for q, d in pairs]
        got, hit = self.cache.lookup_scores(self.key, hashes)
        s = self._served
        s.cached_pairs += int(hit.sum())
        s.cached_tokens += int(got.tokens[hit].sum())
        s.cached_truncated += int(got.truncated[hit].sum())
        scores = got.scores
        missing = np.flatnonzero(~hit)
        if not missing.size:
            return scores
        first_row: dict[bytes, int] = {}
        for i in missing.tolist():
            first_row.setdefault(hashes[i], i)  # the same rendered pair twice is scored once
        todo = list(first_row.values())
        fresh = self.reference.score_rows([pairs[i] for i in todo], [ids[i] for i in todo] if ids is not None else None)
        self.cache.store_scores(self.key, [hashes[i] for i in todo], fresh)
        by_hash = dict(zip((hashes[i] for i in todo), fresh.scores.tolist(), strict=True))
        scores[missing] = [by_hash[hashes[i]] for i in missing.tolist()]
        return scores
