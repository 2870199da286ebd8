"""The audit's collision check (issue 40): chunks whose texts differ but whose stored vectors are one.

Found in the one pass over every stored row (``Scan.same_vector``: a 64-bit hash of each vector, 8 bytes a row),
never sampled: one collapsed chunk in a million is named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..checks import Check, CheckOutcome

if TYPE_CHECKING:
    from .context import AuditContext

SHOWN = 5  # chunks listed per group
MAX_GROUPS = 50  # groups whose texts are re-encoded (the rest are counted, not judged)
APART = (
    0.9999  # texts whose reference vectors reach this cosine are one input to the model (an uncased model's "A", "a")
)


def check_collisions(ctx: AuditContext) -> CheckOutcome:
    """Chunks with different texts stored with one vector (issue 40): the ingest answered one input with another's
    vector (an engine that collapses inputs, a batch slot or a cache keyed by part of the text)."""
    from ..checks.measure import snippet

    s = ctx.scan()
    corpus = ctx.prepared.dataset.corpus
    known = ctx.corpus_ids

    def text(cid: str) -> str | None:
        return corpus[cid] if cid in known else None

    candidates = []
    for rows in s.same_vector():
        ids = list(dict.fromkeys(s.ids[r] for r in rows))
        texts = {text(i) for i in ids}
        if len(ids) > 1 and (len(texts) > 1 or None in texts):  # the same text may share a vector; unknown ids may not
            candidates.append(ids)
    groups = _distinct_to_the_model(ctx, candidates[:MAX_GROUPS], text)
    details: dict[str, Any] = {
        "rows": s.count,
        "groups": len(groups),
        "chunks": sum(len(g) for g in groups),
        "collisions": [
            [{"id": i, "text": snippet(text(i) or "(not in the dataset)", 80)} for i in g[:SHOWN]] for g in groups[:20]
        ],
    }
    if not groups:
        return CheckOutcome(
            "collisions", True, f"collisions: no two chunks of different texts share a vector ({s.count} rows)", details
        )
    first = groups[0]
    shown = " and ".join(f'{i} "{snippet(text(i) or "(not in the dataset)")}"' for i in first[:2])
    return CheckOutcome(
        "collisions",
        False,
        f"collisions: {len(groups)} group(s) of chunks with different texts share one stored vector "
        f"({details['chunks']} chunks; first {shown}"
        + (f" (+{len(first) - 2} more)" if len(first) > 2 else "")
        + "); the ingest answered some inputs with another input's vector (an engine that collapses inputs, a batch "
        "slot or a cache keyed by part of the text): re-embed these chunks and check the engine with the canary "
        "(distinct_inputs, case_variants)",
        details,
    )


COLLISIONS = Check(
    name="collisions",
    label="collisions",
    run=check_collisions,
    explanation="over every stored row: chunks whose texts differ but whose stored vectors are one (to 6 decimals), "
    "each group named with its texts (Ollama#13942 gave every all-uppercase input one vector)",
    example='collisions: 1 group(s) of chunks with different texts share one stored vector (3 chunks; first d3 "THE '
    'MOON ORBITS…" and d9 "A ROUTER FORWARDS…" (+1 more)); the ingest answered some inputs with another input\'s '
    "vector ...",
)


def _distinct_to_the_model(ctx: AuditContext, groups: list[list[str]], text: Any) -> list[list[str]]:
    """The groups, each kept with the chunks whose reference vectors differ from the first's (an id not in the
    dataset always counts): texts the model sees as one input (an uncased model, spaces its tokenizer drops) may share
    a vector."""
    import numpy as np

    out = []
    for ids in groups:
        known = [i for i in ids if text(i) is not None]
        ref = ctx.reference_vectors(known).astype(np.float64) if len(known) > 1 else np.zeros((0, 1))
        norms = np.linalg.norm(ref, axis=1)
        unit = ref / np.where(norms > 0, norms, 1.0)[:, None]
        keep = known[:1]
        for k in range(1, len(known)):
            if float(unit[0] @ unit[k]) < APART:
                keep.append(known[k])
        keep += [i for i in ids if text(i) is None and i not in keep]
        if len(keep) > 1:
            out.append(keep)
    return out
