"""Which recorded releases a new release is compared with, and why a record cannot be.

A record is comparable with the candidate when it was scored on the same dataset (sha256) under the same
contract except the revisions (pooling, prefixes, dtype, max length, dim, ... all equal): its per-query
scores then pair with the candidate's query by query. A record of another dataset or contract is never
mixed in: the anchor that is not comparable makes the gate inconclusive, saying which field differs.

The releases a gate reads are the records of the candidate's model lineage and dataset, in release order,
before the candidate's own record when it has one (a re-run of an old revision is compared with what came
before it), without the candidate's revision and without records whose gates failed (a failed release was not
released). The lineage is the contract's ``model``: the ``model_name`` the user declares, else the model
directory's or hub id's name. A candidate with no earlier release of its lineage while the history holds
releases of other lineages on the same dataset is not a silent first release: the anchor says which lineages
it found and how to name this one (a pipeline whose directory name changes every release would otherwise pass
every history gate as "the first" forever).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .record import HistoryRecord

IGNORED_FIELDS = ("model_revision", "tokenizer_revision")  # a release changes these; the rest is the contract


@dataclass(frozen=True)
class Candidate:
    """What the gates know of the release being judged."""

    model: str
    revision: str
    dataset: str
    dataset_sha256: str
    contract: Mapping[str, object]


@dataclass(frozen=True)
class Anchor:
    """The records a history gate compares with (``records``: one for first/best, the window for a trend), or why
    there is nothing comparable (``why``)."""

    records: tuple[HistoryRecord, ...] = ()
    why: str | None = None
    note: str | None = None  # what the choice left out (incomparable records skipped for best), when anything


def incomparable(record: HistoryRecord, candidate: Candidate) -> str | None:
    """Why ``record`` cannot be paired with the candidate (None: it can)."""
    where = f"release {record.revision[:12]} ({record.path or 'history'})"
    if record.dataset_sha256 != candidate.dataset_sha256:
        return (
            f"{where} was scored on dataset sha256 {record.dataset_sha256[:16]}…, the candidate on "
            f"{candidate.dataset_sha256[:16]}… (the dataset changed): its per-query scores do not pair"
        )
    fields = sorted(
        k
        for k in set(record.contract) | set(candidate.contract)
        if k not in IGNORED_FIELDS and record.contract.get(k) != candidate.contract.get(k)
    )
    if fields:
        diffs = ", ".join(f"{k} {record.contract.get(k)!r} -> {candidate.contract.get(k)!r}" for k in fields)
        return f"{where} was scored under another contract ({diffs})"
    return None


def releases(records: Sequence[HistoryRecord], candidate: Candidate) -> list[HistoryRecord]:
    """The released records before the candidate, in release order."""
    mine = [r for r in records if r.model == candidate.model and r.dataset == candidate.dataset]
    own = next((i for i, r in enumerate(mine) if r.revision == candidate.revision), None)
    before = mine if own is None else mine[:own]
    return [r for r in before if r.revision != candidate.revision and r.verdict != "fail"]


def other_lineages(records: Sequence[HistoryRecord], candidate: Candidate) -> str | None:
    """Why the candidate may not be the first release when the history holds none of its lineage but releases of
    other lineages on its dataset (None: it holds none of those either, or some of the candidate's own)."""
    if any(r.model == candidate.model and r.dataset == candidate.dataset for r in records):
        return None
    others: dict[str, list[HistoryRecord]] = {}
    for r in records:
        if r.dataset == candidate.dataset and r.model != candidate.model:
            others.setdefault(r.model, []).append(r)
    if not others:
        return None
    found = "; ".join(
        f"{name!r} ({len(rs)} release(s), the last {rs[-1].revision[:12]}"
        + (f" from {rs[-1].source}" if rs[-1].source else "")
        + ")"
        for name, rs in sorted(others.items())
    )
    example = sorted(others)[0]
    return (
        f"no earlier release of {candidate.model!r} on {candidate.dataset} is recorded, but the history holds releases "
        f"of other model lineages on it: {found}. A model's lineage is its model_name (else its directory's or hub "
        f"id's name, which a release build may change): if this is a release of one of them, name it "
        f'(model_name = "{example}" in evalsuite.toml, or --model-name {example}); if it is a new model, this '
        "release is recorded as its first and the next one gates against it"
    )


def first(records: Sequence[HistoryRecord], candidate: Candidate, pinned: str | None = None) -> Anchor:
    """The first release (or the release whose revision starts with ``pinned``)."""
    found = releases(records, candidate)
    if not found and (unnamed := other_lineages(records, candidate)) is not None:
        return Anchor(why=unnamed)
    if pinned is not None:
        found = [r for r in found if r.revision.startswith(pinned)]
        if not found:
            return Anchor(
                why=f"the anchor revision {pinned} is not recorded for {candidate.model} on "
                f"{candidate.dataset} before this release; record it first or fix history_anchor"
            )
    if not found:
        return Anchor()  # nothing before: the candidate is the first release
    anchor = found[0]
    why = incomparable(anchor, candidate)
    if why is not None:
        return Anchor(
            why=f"the {'anchor' if pinned else 'first'} {why}; pin an anchor recorded under this dataset "
            'and contract (history_anchor = "REV" or --history-anchor REV)'
        )
    return Anchor((anchor,))


def best(records: Sequence[HistoryRecord], candidate: Candidate, metric: str) -> Anchor:
    """The comparable release with the highest ``metric``; incomparable ones are named in the note."""
    found = releases(records, candidate)
    if not found:
        unnamed = other_lineages(records, candidate)
        return Anchor() if unnamed is None else Anchor(why=unnamed)
    usable = [r for r in found if incomparable(r, candidate) is None and metric in r.metrics]
    skipped = len(found) - len(usable)
    note = f"{skipped} earlier release(s) scored on another dataset or contract left out" if skipped else None
    if not usable:
        why = incomparable(found[-1], candidate) or f"no earlier release recorded {metric}"
        return Anchor(why=f"no earlier release is comparable: {why}")
    return Anchor((max(usable, key=lambda r: r.metrics[metric].value),), note=note)


def window(records: Sequence[HistoryRecord], candidate: Candidate, n: int) -> Anchor:
    """The last ``n - 1`` releases before the candidate, cut at the newest incomparable one (a trend never spans a
    dataset or contract change)."""
    found = releases(records, candidate)[-(n - 1) :] if n > 1 else []
    if not found and (unnamed := other_lineages(records, candidate)) is not None:
        return Anchor(why=unnamed)
    kept: list[HistoryRecord] = []
    cut = None
    for r in reversed(found):
        why = incomparable(r, candidate)
        if why is not None:
            cut = why
            break
        kept.append(r)
    return Anchor(tuple(reversed(kept)), note=f"the window stops at a change: {cut}" if cut else None)
