"""Which queries each slice holds, and the metrics of every reported slice.

A query's profile: its length in tokens, the length of its **longest relevant document** (grade >= 1),
its metadata fields, and the metadata values of its relevant documents. Document length slices go
by the longest relevant document, so the length buckets partition the queries (every query in
exactly one, the slice means average back to the whole) and ``doclen=truncated`` holds exactly the
queries at least one of whose relevant documents the contract cuts: a query is as exposed to
truncation as its longest answer. A document metadata slice (``doc.FIELD=V``) holds the queries
with at least one relevant document of that value (those slices may overlap).

A slice metric is the mean of the per-query values (ranx's per-query scores) over the slice's queries; with
``intervals`` its 95% percentile bootstrap interval over those values (:func:`evalsuite.scoring.stats.mean_bootstrap`,
10,000 resamples, seed 0: the resamples a floor gate on the slice judges), for slices of at least
:data:`MIN_INTERVAL` scored queries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import SpecError
from .selectors import DOC_FIELD_PREFIX, LENGTHS, Selector, length_buckets, parse_selector
from .tokens import count_tokens

if TYPE_CHECKING:
    from ..contract import Contract
    from ..datasets import Dataset

DEFAULT_FIELDS = ("topic", "domain")  # reported without --slice-by when the queries carry them
MIN_QUERIES = 10  # a slice gate with fewer queries is inconclusive
MIN_INTERVAL = 2  # a slice mean over fewer scored queries has no interval (one query's resamples are all alike)
_MAX_LISTED = 12


@dataclass(frozen=True)
class QueryProfile:
    qlen: int
    doclen: int  # tokens of the longest relevant document
    fields: Mapping[str, str] = field(default_factory=dict)
    doc_fields: Mapping[str, frozenset[str]] = field(default_factory=dict)  # over the relevant documents


@dataclass(frozen=True)
class SliceRow:
    """One reported slice: its selector, how many queries it holds, each metric's mean over them and, when asked
    for, that mean's 95% bootstrap interval ``(low, high)`` (metrics with fewer than :data:`MIN_INTERVAL` scored
    queries have none)."""

    slice: str
    n_queries: int
    metrics: Mapping[str, float]
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "slice": self.slice,
            "n_queries": self.n_queries,
            "metrics": {m: round(v, 6) for m, v in self.metrics.items()},
        }
        if self.intervals:
            out["ci_low"] = {m: round(lo, 6) for m, (lo, _) in self.intervals.items()}
            out["ci_high"] = {m: round(hi, 6) for m, (_, hi) in self.intervals.items()}
        return out


@dataclass(frozen=True)
class SliceIndex:
    """Slice membership of a dataset's queries under one contract (lengths depend on its prefixes)."""

    max_length: int
    profiles: Mapping[str, QueryProfile]
    slice_by: tuple[str, ...] = ()  # the metadata fields reported (query fields, or doc.FIELD)
    _members: dict[Selector, tuple[str, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def members(self, selector: Selector) -> tuple[str, ...]:
        """The ids of the queries in the slice, in dataset order (found once per selector: reports ask often)."""
        found = self._members.get(selector)
        if found is None:
            found = self._members[selector] = self._find(selector)
        return found

    def _find(self, selector: Selector) -> tuple[str, ...]:
        if selector.is_length:
            attr = selector.dimension
            return tuple(q for q, p in self.profiles.items() if selector.holds(getattr(p, attr), self.max_length))
        if selector.is_doc_field:
            name = selector.dimension[len(DOC_FIELD_PREFIX) :]
            return tuple(q for q, p in self.profiles.items() if selector.value in p.doc_fields.get(name, ()))
        return tuple(q for q, p in self.profiles.items() if p.fields.get(selector.dimension) == selector.value)

    def values(self, field_name: str) -> list[str]:
        """The values a query field (or ``doc.FIELD``) takes, sorted."""
        if field_name.startswith(DOC_FIELD_PREFIX):
            name = field_name[len(DOC_FIELD_PREFIX) :]
            return sorted({v for p in self.profiles.values() for v in p.doc_fields.get(name, ())})
        return sorted({p.fields[field_name] for p in self.profiles.values() if field_name in p.fields})

    def known_fields(self) -> list[str]:
        q = {f for p in self.profiles.values() for f in p.fields}
        d = {DOC_FIELD_PREFIX + f for p in self.profiles.values() for f in p.doc_fields}
        return sorted(q) + sorted(d)

    def check_field(self, name: str, where: str) -> None:
        if name in LENGTHS or name in self.known_fields():
            return
        known = self.known_fields()
        raise SpecError(
            f"{where}: the queries have no metadata field {name!r}; known fields: "
            f"{', '.join(known) if known else 'none (queries.jsonl records hold only _id and text)'}; "
            "a document field is written doc.FIELD"
        )

    def check(self, selector: Selector, where: str) -> None:
        """SpecError when the selector names a field or value the dataset does not have."""
        if selector.is_length:
            return
        self.check_field(selector.dimension, where)
        values = self.values(selector.dimension)
        if selector.value not in values:
            shown = ", ".join(values[:_MAX_LISTED]) + (", ..." if len(values) > _MAX_LISTED else "")
            raise SpecError(
                f"{where}: no query has {selector.dimension}={selector.value!r}; {selector.dimension} takes {shown}"
            )

    def reported(self) -> tuple[Selector, ...]:
        """The slices every report shows: non-empty length buckets, then each value of each ``slice_by`` field."""
        out = [s for dim in LENGTHS for s in length_buckets(dim) if self.members(s)]
        out += [parse_selector(f"{f}={v}") for f in self.slice_by for v in self.values(f)]
        return tuple(out)

    def table(
        self,
        per_query: Mapping[str, Mapping[str, float]],
        selectors: Sequence[Selector] | None = None,
        *,
        intervals: bool = False,
    ) -> tuple[SliceRow, ...]:
        """Each slice's query count and per-metric mean over its queries (those the metric scored); with
        ``intervals``, each mean's bootstrap interval too."""
        return self.tables([per_query], selectors, intervals=intervals)[0]

    def tables(
        self,
        runs: Sequence[Mapping[str, Mapping[str, float]]],
        selectors: Sequence[Selector] | None = None,
        *,
        intervals: bool = False,
    ) -> list[tuple[SliceRow, ...]]:
        """:meth:`table` of several runs' per-query scores at once (a sweep's base and cells). Per slice, every
        (run, metric) scored on the same queries shares one bootstrap call: the resamples depend on the number
        of queries and the seed only, so each interval is the one that run and metric get alone."""
        out: list[list[SliceRow]] = [[] for _ in runs]
        for s in self.reported() if selectors is None else selectors:
            qids = self.members(s)
            means: list[dict[str, float]] = [{} for _ in runs]
            series: dict[tuple[str, ...], list[tuple[int, str]]] = {}  # scored queries -> (run, metric)
            for i, per_q in enumerate(runs):
                for m, scores in per_q.items():
                    scored = tuple(q for q in qids if q in scores)
                    if scored:
                        means[i][m] = sum(scores[q] for q in scored) / len(scored)
                        if intervals and len(scored) >= MIN_INTERVAL:
                            series.setdefault(scored, []).append((i, m))
            bounds: list[dict[str, tuple[float, float]]] = [{} for _ in runs]
            for scored, columns in series.items():
                for (i, m), (low, high) in zip(columns, _bootstrap(runs, scored, columns), strict=True):
                    bounds[i][m] = (low, high)
            for i in range(len(runs)):
                out[i].append(
                    SliceRow(s.text, len(qids), means[i], {m: bounds[i][m] for m in means[i] if m in bounds[i]})
                )
        return [tuple(rows) for rows in out]

    def to_dict(self, per_query: Mapping[str, Mapping[str, float]]) -> dict[str, object]:
        return {
            "max_length": self.max_length,
            "slice_by": list(self.slice_by),
            "doclen": "tokens of the query's longest relevant document (grade >= 1)",
            "ci": INTERVAL_NOTE,
            "slices": [r.to_dict() for r in self.table(per_query, intervals=True)],
        }


INTERVAL_NOTE = (
    "ci_low / ci_high: 95% percentile bootstrap interval of the slice mean over its queries "
    f"(10,000 resamples, seed 0); none below {MIN_INTERVAL} scored queries"
)


def _bootstrap(
    runs: Sequence[Mapping[str, Mapping[str, float]]], scored: Sequence[str], columns: Sequence[tuple[int, str]]
) -> list[tuple[float, float]]:
    """``(low, high)`` of each ``(run, metric)`` column's mean over the ``scored`` queries, one bootstrap call."""
    import numpy as np

    from ..scoring.stats import mean_bootstrap

    values = np.array([[runs[i][m][q] for i, m in columns] for q in scored], dtype=np.float64)
    return [(ci.low, ci.high) for ci in mean_bootstrap(values)]


def default_slice_by(dataset: Dataset) -> tuple[str, ...]:
    present = {f for fields in dataset.query_fields.values() for f in fields}
    return tuple(f for f in DEFAULT_FIELDS if f in present)


def build_slice_index(
    dataset: Dataset, contract: Contract, tokenizer_dir: Path, slice_by: Sequence[str] | None = None
) -> SliceIndex:
    """Count the tokens of every query and relevant document as ``contract`` renders them, and profile
    each query. ``slice_by`` (None: :data:`DEFAULT_FIELDS` present on the queries) is checked against
    the dataset's fields; an unknown one is a SpecError listing the known ones."""
    qids = dataset.query_ids
    relevant = {q: [d for d, g in dataset.qrels[q].items() if g >= 1] for q in qids}
    dids = list(dict.fromkeys(d for q in qids for d in relevant[q]))
    qlen = count_tokens(tokenizer_dir, contract.render_all("query", [dataset.queries[q] for q in qids]))
    dlen = dict(
        zip(
            dids,
            count_tokens(tokenizer_dir, contract.render_all("document", [dataset.corpus[d] for d in dids])),
            strict=True,
        )
    )
    profiles = {}
    for q, n in zip(qids, qlen, strict=True):
        docs: dict[str, set[str]] = {}
        for d in relevant[q]:
            for k, v in dataset.doc_fields.get(d, {}).items():
                docs.setdefault(k, set()).add(v)
        profiles[q] = QueryProfile(
            n,
            max((dlen[d] for d in relevant[q]), default=0),
            dict(dataset.query_fields.get(q, {})),
            {k: frozenset(v) for k, v in docs.items()},
        )
    index = SliceIndex(contract.max_length, profiles)
    fields = tuple(dict.fromkeys(slice_by)) if slice_by is not None else default_slice_by(dataset)
    for f in fields:
        index.check_field(f, "--slice-by")
    return SliceIndex(contract.max_length, profiles, tuple(f for f in fields if f not in LENGTHS))
