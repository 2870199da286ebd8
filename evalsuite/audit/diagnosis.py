"""Why stored vectors differ from their chunks' reference vectors, with the alternatives the canary's diagnosis tries
(``diagnose/``).

Two classes of cause, tested in order for each infidel sampled row:

- a **mapping fault**: the stored vector equals the reference vector of *another* chunk stored nearby (the
  ingest job zipped a batch's vectors with the wrong ids: shifted by one, or permuted). The rows within
  ``window`` of each infidel row are compared with their neighbours' reference vectors, so the whole run of
  shifted rows is found, not only the sampled ones;
- a **stale** vector: it equals the chunk's reference under an alternative way of making it (another pooling,
  prefixes, normalization, truncation, Matryoshka cut, dtype, or a ``--suspect-model`` revision): each row is
  diagnosed on its own by :func:`evalsuite.diagnose.score.diagnose` over the alternatives that
  :class:`evalsuite.diagnose.local.AlternativeVectors` computes with the reference, so a mixture of causes
  is split into groups, each with its share of the sample and a 95% Wilson interval.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..scoring.stats import wilson  # the share's interval (also the canary's determinism check)

if TYPE_CHECKING:
    from ..diagnose.local import ReferenceSource
    from .context import AuditContext, Fidelity

MAX_WINDOW_ROWS = 4096  # rows re-encoded to find where misplaced vectors belong


def share_text(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k / n:.1%} of vectors ({k} of {n} sampled, 95% CI {lo:.1%}–{hi:.1%})"


@dataclass(frozen=True)
class Misplaced:
    row: int
    chunk: str  # the id stored on this row
    owner: str  # the chunk whose reference vector this row holds
    offset: int  # owner's row - this row


@dataclass(frozen=True)
class MappingFault:
    """Rows holding the vector of another chunk stored nearby; ``sampled`` of the audited sample among them."""

    rows: tuple[Misplaced, ...]
    sampled: int
    sample_size: int

    def runs(self) -> list[list[Misplaced]]:
        out: list[list[Misplaced]] = []
        for m in sorted(self.rows, key=lambda m: m.row):
            if out and m.row == out[-1][-1].row + 1:
                out[-1].append(m)
            else:
                out.append([m])
        return out

    def kind(self) -> tuple[str, int | None]:
        """("shift", offset) when one offset covers at least 80% of the rows, else ("permutation", None)."""
        offset, n = Counter(m.offset for m in self.rows).most_common(1)[0]
        return ("shift", offset) if n >= 0.8 * len(self.rows) else ("permutation", None)

    def sentence(self) -> str:
        runs = self.runs()
        kind, offset = self.kind()
        sizes = sorted({len(r) for r in runs})
        inside = f"inside {len(runs)} run{'s' if len(runs) > 1 else ''} of {'/'.join(map(str, sizes))} consecutive rows"
        first = runs[0][0]
        what = f"ids shifted by {offset:+d}" if kind == "shift" else "ids permuted"
        return (
            f"mapping fault: {what} {inside}, first at chunk {first.chunk} (row {first.row}, which holds the vector "
            f"of {first.owner}); {share_text(self.sampled, self.sample_size)} hold another chunk's vector; "
            "fix: the ingest job pairs a batch's vectors with the wrong ids (a short last batch, a retried batch, "
            "completions zipped in arrival order): pair each vector with the id it was requested for and re-ingest "
            "those rows"
        )

    def to_dict(self) -> dict[str, Any]:
        kind, offset = self.kind()
        return {
            "class": "mapping",
            "kind": kind,
            "offset": offset,
            "rows": len(self.rows),
            "runs": [[r[0].row, r[-1].row] for r in self.runs()],
            "ids": [m.chunk for m in self.rows[:50]],
            "holds_vector_of": [m.owner for m in self.rows[:50]],
            "sampled": self.sampled,
            "sample_size": self.sample_size,
            "share": round(self.sampled / max(1, self.sample_size), 6),
            "ci95": [round(x, 6) for x in wilson(self.sampled, self.sample_size)],
            "sentence": self.sentence(),
        }


@dataclass(frozen=True)
class StaleGroup:
    """Sampled rows made another way than the contract says (the same alternative for all of them)."""

    label: str  # the alternative, e.g. "pooling=cls"
    causes: tuple[str, ...]
    remedies: tuple[str, ...]
    ids: tuple[str, ...]
    sample_size: int

    def sentence(self) -> str:
        cause = " and ".join(self.causes) or self.label
        return (
            f"stale: {share_text(len(self.ids), self.sample_size)} were made with {self.label} ({cause}), first "
            f"{', '.join(self.ids[:3])}; fix: {'; '.join(dict.fromkeys(self.remedies)) or 're-embed them'} and "
            "re-embed those chunks"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": "stale",
            "alternative": self.label,
            "causes": list(self.causes),
            "ids": list(self.ids[:50]),
            "count": len(self.ids),
            "sample_size": self.sample_size,
            "share": round(len(self.ids) / max(1, self.sample_size), 6),
            "ci95": [round(x, 6) for x in wilson(len(self.ids), self.sample_size)],
            "sentence": self.sentence(),
        }


@dataclass(frozen=True)
class AuditDiagnosis:
    bad: int
    sample_size: int
    mapping: MappingFault | None
    stale: tuple[StaleGroup, ...]
    unexplained: tuple[str, ...]
    not_tested: tuple[str, ...] = ()

    def sentences(self) -> list[str]:
        out = [self.mapping.sentence()] if self.mapping else []
        out += [g.sentence() for g in self.stale]
        if self.unexplained:
            out.append(
                f"unexplained: {share_text(len(self.unexplained), self.sample_size)} match neither a nearby chunk "
                f"nor any tested alternative, first {', '.join(self.unexplained[:3])}"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "bad": self.bad,
            "sample_size": self.sample_size,
            "causes": ([self.mapping.to_dict()] if self.mapping else []) + [g.to_dict() for g in self.stale],
            "unexplained": list(self.unexplained[:50]),
            "not_tested": list(self.not_tested),
            "sentences": self.sentences(),
        }


def diagnose_infidelity(ctx: AuditContext, fid: Fidelity, bad: np.ndarray) -> AuditDiagnosis:
    """Name the cause of every infidel sampled row (``bad``: indices into ``fid``)."""
    n = len(fid.ids)
    bad_rows = [int(fid.rows[i]) for i in bad]
    mapping = _mapping(ctx, bad_rows)
    misplaced = {m.row for m in mapping.rows} if mapping else set()
    rest = [int(i) for i in bad if int(fid.rows[i]) not in misplaced]
    sampled_misplaced = sum(int(fid.rows[i]) in misplaced for i in bad)
    fault = MappingFault(mapping.rows, sampled_misplaced, n) if mapping else None
    stale, unexplained, not_tested = _stale(ctx, fid, rest) if rest else ((), (), ())
    return AuditDiagnosis(len(bad), n, fault, stale, unexplained, not_tested)


def _mapping(ctx: AuditContext, bad_rows: Sequence[int]) -> MappingFault | None:
    """The rows within the window of each infidel row whose stored vector is a nearby chunk's reference vector."""
    scan, w, count = ctx.scan(), ctx.settings.window, ctx.info().count
    min_cos, known = ctx.settings.min_cosine, ctx.corpus_ids
    rows: list[int] = []
    seen: set[int] = set()
    for r in bad_rows:
        for q in range(max(0, r - w), min(count, r + w + 1)):
            if q not in seen and scan.ids[q] in known:
                seen.add(q)
                rows.append(q)
        if len(rows) >= MAX_WINDOW_ROWS:
            break
    rows.sort()
    if not rows:
        return None
    ids = [scan.ids[q] for q in rows]
    stored = _stored_rows(ctx, rows)
    unique = list(dict.fromkeys(ids))
    ref = ctx.reference_vectors(unique)
    if stored.shape[1] != ref.shape[1]:
        return None
    s = stored / np.maximum(np.linalg.norm(stored, axis=1, keepdims=True), 1e-12)
    r = ref / np.maximum(np.linalg.norm(ref, axis=1, keepdims=True), 1e-12)
    sims = s.astype(np.float64) @ r.astype(np.float64).T  # window rows x window chunks
    own = np.array([unique.index(i) for i in ids])
    own_cos = sims[np.arange(len(rows)), own]
    best = sims.argmax(axis=1)
    rows_of: dict[str, list[int]] = {}
    for q, cid in zip(rows, ids, strict=True):
        rows_of.setdefault(cid, []).append(q)
    found: list[Misplaced] = []
    for j, q in enumerate(rows):
        b = int(best[j])
        if own_cos[j] < min_cos and sims[j, b] >= min_cos and unique[b] != ids[j]:
            owner_row = min(rows_of[unique[b]], key=lambda x: abs(x - q))
            found.append(Misplaced(q, ids[j], unique[b], owner_row - q))
    return MappingFault(tuple(found), 0, 0) if found else None


def _stored_rows(ctx: AuditContext, rows: list[int]) -> np.ndarray:
    """The stored vectors of these rows (by id through ``fetch``; a duplicated id's k-th vector is its k-th row)."""
    scan = ctx.scan()
    ids = [scan.ids[q] for q in rows]
    fetched = ctx.source.fetch(list(dict.fromkeys(ids)))
    dup_rows: dict[str, list[int]] = {}
    wanted = {cid for cid in ids if len(fetched.get(cid, ())) > 1}
    if wanted:
        for q, cid in enumerate(scan.ids):
            if cid in wanted:
                dup_rows.setdefault(cid, []).append(q)
    out = []
    for q, cid in zip(rows, ids, strict=True):
        vecs = fetched[cid]
        out.append(vecs[dup_rows[cid].index(q)] if cid in dup_rows else vecs[0])
    return np.asarray(out, dtype=np.float32)


def _stale(
    ctx: AuditContext, fid: Fidelity, rest: list[int]
) -> tuple[tuple[StaleGroup, ...], tuple[str, ...], tuple[str, ...]]:
    """Each remaining infidel row diagnosed on its own against the alternatives, grouped by the one that explains it."""
    from ..diagnose.hypotheses import Alternative
    from ..diagnose.local import AlternativeVectors, Hypotheses, Probes
    from ..diagnose.score import diagnose

    p = ctx.prepared
    c, info = p.contract, p.model
    hidden = int(info.hidden_size)
    ids = [fid.ids[i] for i in rest]
    corpus = p.dataset.corpus
    probes = Probes(tuple(ids), ("document",) * len(ids), tuple(corpus[i] for i in ids))
    stored = fid.stored[rest]
    vectors = AlternativeVectors(c, hidden, info.prompts, _reference_source(ctx), probes, info.default_prompt_name)
    hyps = Hypotheses.for_contract(
        c,
        model_max=info.default_max_length,
        max_positions=info.max_positions,
        server_max=None,
        suspects=ctx.settings.suspect_models,
    )
    base = Alternative.of_contract(c, hidden)
    candidates: dict[Alternative, np.ndarray] = {}
    explained: dict[int, tuple[str, tuple[str, ...], tuple[str, ...]]] = {}
    for group in vectors.candidate_groups(base, int(stored.shape[1]), hyps):
        candidates.update(group)
        for j in range(len(ids)):
            if j in explained:
                continue
            one = {a: v[j : j + 1] for a, v in candidates.items()}
            d = diagnose(stored[j : j + 1], one, [ids[j]], base=base, hidden=hidden, contract=c, what=ids[j])
            if d.explained:
                explained[j] = (d.best.label, tuple(x.text for x in d.causes), tuple(x.remedy for x in d.causes))
        if len(explained) == len(ids):
            break
    groups: dict[str, list[int]] = {}
    for j, (label, _, _) in explained.items():
        groups.setdefault(label, []).append(j)
    stale = tuple(
        StaleGroup(label, explained[js[0]][1], explained[js[0]][2], tuple(ids[j] for j in js), len(fid.ids))
        for label, js in sorted(groups.items(), key=lambda kv: -len(kv[1]))
    )
    unexplained = tuple(ids[j] for j in range(len(ids)) if j not in explained)
    return stale, unexplained, tuple(vectors.not_tested)


def _reference_source(ctx: AuditContext) -> ReferenceSource:
    from ..diagnose.reference import reference_source
    from ..run.pipeline import make_encoder

    prepared = ctx.prepared
    return reference_source(
        prepared.contract,
        prepared.model,
        prepared.spec.device,
        ctx.encoder,
        lambda dtype, max_length: make_encoder(prepared, dtype=dtype, max_length=max_length),
        prepared.model.hidden_size,
    )
