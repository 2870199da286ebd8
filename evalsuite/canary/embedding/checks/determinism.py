"""The same texts in batches of different composition and order, each batch sent twice, and concurrently (issue 40).

TEI returned another vector for the same request about 5% of the time on Qwen3 (TEI#649, #668, #704), depending on
what else was in the batch; a fixed batch repeated does not show that. Six canary texts (of mixed lengths) are sent
in three batches (with six other texts, with six others in another order, alone), each batch twice, then two at a
time concurrently: nine requests, seven vectors per text. Each text's vectors are compared with each other (not with
the reference: vector agreement judges that), at the batch-invariance cosine:

- a batch sent twice that gives two vectors for one text is **nondeterminism**, named with the batch size it
  appeared at;
- every repeat alike but the vectors moving with the batch is a **batch-composition** fault (order or padding);

with the worst deviation per text, and the share of texts (and of vectors) that moved, each with its 95% Wilson
interval: that share is what the check can estimate of a fault's rate.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ....checks import Check, CheckOutcome
from .agreement import padding_hint

if TYPE_CHECKING:
    import numpy as np

    from ..context import CanaryContext

TARGETS = ("q1", "q4", "q10", "d1", "d11", "d_long")  # mixed lengths: a padding fault moves the short ones
FILLERS = 6  # other canary texts in each mixed batch
PAIR = 2  # texts per concurrent request


@dataclass
class Observations:
    """Each target's vectors, in the order sent, with what request gave each (its label and batch size)."""

    vectors: dict[int, list[np.ndarray]] = field(default_factory=dict)
    sources: dict[int, list[tuple[str, int]]] = field(default_factory=dict)
    requests: int = 0

    def add(self, rows: list[int], got: np.ndarray, label: str, size: int) -> None:
        for r, v in zip(rows, got, strict=True):
            self.vectors.setdefault(r, []).append(v)
            self.sources.setdefault(r, []).append((label, size))


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    import numpy as np

    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(np.dot(a, b) / (na * nb)) if na > 0 and nb > 0 else 0.0


def _plan(ids: tuple[str, ...]) -> tuple[list[int], list[int]]:
    targets = [ids.index(t) for t in TARGETS if t in ids]
    if len(targets) < 2:
        targets = list(range(min(len(TARGETS), len(ids))))
    rest = [i for i in range(len(ids)) if i not in targets]
    return targets, rest


def check_determinism(ctx: CanaryContext) -> CheckOutcome:
    from ....scoring.stats import wilson

    s, c, cs = ctx.settings, ctx.contract, ctx.canary_set()
    rendered, client = cs.rendered(c), ctx.client()
    ctx.served_vectors()  # a server that already failed the canary texts fails here at once, with that error
    targets, rest = _plan(cs.ids)
    obs = Observations()

    def send(rows: list[int], label: str) -> None:
        got = client.embed(
            [rendered[i] for i in rows], ids=[cs.ids[i] for i in rows], batch_size=len(rows), sort_by_length=False
        )[:, : c.dim]
        obs.requests += 1
        keep = [(k, r) for k, r in enumerate(rows) if r in targets]
        obs.add([r for _, r in keep], got[[k for k, _ in keep]], label, len(rows))

    batches = {
        "mixed A": _shuffled(targets + rest[:FILLERS], 1),
        "mixed B": _shuffled(targets + rest[FILLERS : 2 * FILLERS], 2)[::-1],
        "alone": targets[::-1],
    }
    for name, rows in batches.items():
        send(rows, f"{name} (1st)")
        send(rows, f"{name} (2nd)")
    concurrent = client.embed(
        [rendered[i] for i in targets], ids=[cs.ids[i] for i in targets], batch_size=PAIR, sort_by_length=False
    )[:, : c.dim]
    obs.requests += -(-len(targets) // PAIR)
    obs.add(targets, concurrent, "concurrent", PAIR)

    threshold = s.batch_min_cosine
    per_text: dict[str, Any] = {}
    moved_texts, odd_vectors, total = 0, 0, 0
    repeat_moved: list[tuple[str, str, int, float]] = []  # (text id, batch, size, cosine of its two sends)
    composition_moved: list[tuple[str, str, float]] = []
    for r in targets:
        vecs, srcs = obs.vectors[r], obs.sources[r]
        n = len(vecs)
        cos = [[_cos(vecs[i], vecs[j]) for j in range(n)] for i in range(n)]
        worst = min(cos[i][j] for i in range(n) for j in range(n))
        mode = max(range(n), key=lambda i: (sum(x >= threshold for x in cos[i]), -i))
        odd = [i for i in range(n) if cos[mode][i] < threshold]
        total += n
        odd_vectors += len(odd)
        moved_texts += bool(odd)
        for i in range(0, 6, 2):  # the two sends of each batch
            if cos[i][i + 1] < threshold:
                repeat_moved.append((cs.ids[r], srcs[i][0].split(" (")[0], srcs[i][1], cos[i][i + 1]))
        if odd:
            composition_moved.append((cs.ids[r], srcs[odd[0]][0], cos[mode][odd[0]]))
        per_text[cs.ids[r]] = {
            "worst_cosine": round(worst, 8),
            "vectors": n,
            "moved": [srcs[i][0] for i in odd],
        }
    text_ci, vector_ci = wilson(moved_texts, len(targets)), wilson(odd_vectors, total)
    share = (
        f"{moved_texts} of {len(targets)} texts moved (95% CI {text_ci[0]:.0%}-{text_ci[1]:.0%}), {odd_vectors} of "
        f"{total} vectors (rate {odd_vectors / total:.1%}, 95% CI {vector_ci[0]:.1%}-{vector_ci[1]:.1%})"
    )
    details: dict[str, Any] = {
        "threshold": threshold,
        "requests": obs.requests,
        "texts": [cs.ids[r] for r in targets],
        "batches": {k: [cs.ids[i] for i in v] for k, v in batches.items()},
        "per_text": per_text,
        "moved_texts": moved_texts,
        "moved_texts_ci95": [round(x, 6) for x in text_ci],
        "moved_vectors": odd_vectors,
        "vectors": total,
        "moved_vectors_rate": round(odd_vectors / total, 6),
        "moved_vectors_ci95": [round(x, 6) for x in vector_ci],
        "worst_cosine": round(min(v["worst_cosine"] for v in per_text.values()), 8),
    }
    what = f"{len(targets)} texts in {obs.requests} requests (3 batches sent twice, then {PAIR} at a time at once)"
    if repeat_moved:
        tid, batch, size, x = repeat_moved[0]
        sizes = sorted({z for _, _, z, _ in repeat_moved})
        details["kind"] = "nondeterminism"
        details["repeat_moved"] = [
            {"text": t, "batch": b, "size": z, "cosine": round(x, 8)} for t, b, z, x in repeat_moved
        ]
        return CheckOutcome(
            "determinism",
            False,
            f"determinism: nondeterminism: the same request gave {tid} two vectors (batch {batch!r} of {size} texts "
            f"sent twice: cosine {x:.6f} < {threshold}; at batch size(s) {', '.join(map(str, sizes))}); {share}; "
            "the engine is nondeterministic (TEI#649: about 5% of requests on Qwen3); remedy: upgrade past the "
            "engine's fix, or serve with deterministic kernels and one text a batch until then",
            details,
        )
    if composition_moved:
        tid, source, x = composition_moved[0]
        details["kind"] = "batch_composition"
        return CheckOutcome(
            "determinism",
            False,
            f"determinism: every batch sent twice gave the same vectors, but they change with the batch's "
            f"composition or order: {tid} in {source!r} cosine {x:.6f} < {threshold}; {share}; a batch-order or "
            "padding fault, not nondeterminism"
            + padding_hint(c.pooling, getattr(ctx.tokenizer(), "padding_side", None)),
            details,
        )
    return CheckOutcome(
        "determinism",
        True,
        f"determinism: {what}: every text's vectors agree (worst cosine {details['worst_cosine']:.6f} >= "
        f"{threshold}); {share}",
        details,
    )


def _shuffled(rows: list[int], seed: int) -> list[int]:
    out = list(rows)
    random.Random(seed).shuffle(out)
    return out


DETERMINISM = Check(
    name="determinism",
    label="determinism",
    run=check_determinism,
    thresholds=("batch_min_cosine",),
    explanation="six canary texts in three batches (with other texts, in another order, alone), each sent twice, then "
    "two at a time concurrently (9 requests): every text's vectors agree; a batch whose two sends differ is named "
    "nondeterminism with its batch size, vectors that move only with the batch a batch-composition fault; the share "
    "of texts and vectors that moved is given with its 95% interval (TEI#649, #668, #704)",
    example="determinism: nondeterminism: the same request gave d11 two vectors (batch 'mixed A' of 12 texts sent "
    "twice: cosine 0.871234 < 0.999; at batch size(s) 12); 4 of 6 texts moved (95% CI 30%-90%), 9 of 42 vectors "
    "(rate 21.4%, 95% CI 11.7%-35.9%); the engine is nondeterministic ...",
    stage="batch",
)
