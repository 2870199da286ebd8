"""What a load test sends: the dataset's own texts (queries and documents, rendered by the contract),
their token counts under the model's tokenizer, length buckets, and seeded request draws.

A request carries ``batch_size`` texts of one length bucket; the bucket of each request is drawn with
the bucket's share of the dataset's texts, so the load follows the dataset's real length distribution
and every request's latency belongs to one bucket.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.errors import SpecError

if TYPE_CHECKING:
    from ..run.pipeline import Prepared

BUCKET_EDGES = (32, 128, 256, 512)


def bucket_names(edges: Sequence[int] = BUCKET_EDGES) -> tuple[str, ...]:
    return (*(f"<={e}" for e in edges), f">{edges[-1]}")


def bucket_of(tokens: int, edges: Sequence[int] = BUCKET_EDGES) -> str:
    """The bucket of a text of ``tokens`` tokens: the first edge it does not exceed, else the last."""
    i = bisect.bisect_left(edges, tokens)
    return f"<={edges[i]}" if i < len(edges) else f">{edges[-1]}"


@dataclass(frozen=True)
class Workload:
    """Texts as sent (prefixes applied), their full token counts, and the contract's max length."""

    texts: tuple[str, ...]
    tokens: tuple[int, ...]
    max_length: int
    edges: tuple[int, ...] = BUCKET_EDGES

    def __post_init__(self) -> None:
        if not self.texts:
            raise SpecError("the load workload is empty: the dataset has no queries or documents to send")
        if len(self.texts) != len(self.tokens):
            raise SpecError(f"workload has {len(self.texts)} texts but {len(self.tokens)} token counts")
        if list(self.edges) != sorted(set(self.edges)) or self.edges[0] < 1:
            raise SpecError(f"bucket edges must be increasing positive integers, got {list(self.edges)}")

    def processed_tokens(self, i: int) -> int:
        """Tokens the model runs for text ``i``: its count, truncated at the contract's max length."""
        return min(self.tokens[i], self.max_length)

    def by_bucket(self) -> dict[str, list[int]]:
        """Bucket name -> indices of its texts, buckets in edge order, empty buckets left out."""
        out: dict[str, list[int]] = {name: [] for name in bucket_names(self.edges)}
        for i, n in enumerate(self.tokens):
            out[bucket_of(n, self.edges)].append(i)
        return {k: v for k, v in out.items() if v}

    def shares(self) -> dict[str, float]:
        n = len(self.texts)
        return {k: len(v) / n for k, v in self.by_bucket().items()}

    def to_dict(self) -> dict[str, object]:
        groups = self.by_bucket()
        return {
            "texts": len(self.texts),
            "max_length": self.max_length,
            "edges": list(self.edges),
            "buckets": {
                k: {
                    "texts": len(v),
                    "share": round(len(v) / len(self.texts), 4),
                    "truncated": sum(self.tokens[i] > self.max_length for i in v),
                }
                for k, v in groups.items()
            },
        }


@dataclass(frozen=True)
class Draw:
    """One request to send: the bucket and the workload indices of its texts."""

    bucket: str
    indices: tuple[int, ...]


def draw_requests(workload: Workload, batch_size: int, n: int, seed: int) -> list[Draw]:
    """``n`` requests of ``batch_size`` texts each. Buckets are drawn with their dataset share, texts
    uniformly (with replacement) within the bucket; the same seed gives the same requests."""
    if batch_size < 1 or n < 0:
        raise SpecError(f"batch size must be >= 1 and request count >= 0, got {batch_size} and {n}")
    rng = random.Random(seed)
    groups = workload.by_bucket()
    names = list(groups)
    weights = [len(groups[k]) for k in names]
    out = []
    for _ in range(n):
        name = rng.choices(names, weights=weights)[0]
        out.append(Draw(name, tuple(rng.choice(groups[name]) for _ in range(batch_size))))
    return out


def token_counts(tokenizer_path: str, texts: Sequence[str]) -> list[int]:
    """Full token counts (special tokens included, no truncation) under the model's own tokenizer."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_path, local_files_only=True)
    counts: list[int] = []
    for start in range(0, len(texts), 2048):
        enc = tok(
            list(texts[start : start + 2048]),
            truncation=False,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )["input_ids"]
        counts.extend(len(row) for row in enc)
    return counts


def dataset_workload(prepared: Prepared, roles: Sequence[str] = ("query", "document")) -> Workload:
    """The dataset's queries and/or documents as the contract renders them, with their token counts."""
    c, ds = prepared.contract, prepared.dataset
    texts: list[str] = []
    for role in roles:
        if role == "query":
            texts += c.render_all("query", [ds.queries[i] for i in ds.query_ids])
        elif role == "document":
            texts += c.render_all("document", [t for _, chunk in ds.corpus_chunks(65_536) for t in chunk])
        else:
            raise SpecError(f"load roles are 'query' and 'document', got {role!r}")
    return Workload(tuple(texts), tuple(token_counts(str(prepared.model.tokenizer_path), texts)), c.max_length)
