"""Texts a fixed probe set misses (issue 40): case and whitespace variants, and distinct inputs that must stay distinct.

Engines have shipped faults that leave every ordinary canary text intact: every all-uppercase input got one vector
(Ollama#13942), inputs sharing a long prefix came back as one vector. Each variant here is compared with the
reference of *that* text (the reference is not case-insensitive either: the check is agreement, not invariance),
and any two distinct texts whose reference vectors differ but whose served vectors are one (a cosine above
``collision_cosine`` the reference pair does not come near) are a collision, named with both texts.

The variants and the prefix pairs go to the server in one request, shared by both checks (memoized per context).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ....checks import Check, CheckOutcome
from ....checks.measure import row_cosine, snippet

if TYPE_CHECKING:
    import numpy as np

    from ..context import CanaryContext

# the canary texts whose variants are sent: (id, role), texts from run/probes.py
VARIED = (("q1", "query"), ("q3", "query"), ("d1", "document"))
VARIANTS = ("upper", "lower", "title", "whitespace")
# texts that share a long prefix and differ at the end: a server keyed by a prefix (a cache, a cut) gives them one vector
PREFIX_PAIRS: tuple[tuple[str, str, str], ...] = (
    (
        "pair1",
        "the team player read the rule of the game and the score of the team was the goal of the player on the court",
        "the team player read the rule of the game and the score of the team was the goal of the player on the field",
    ),
    (
        "pair2",
        "the router sends each packet of the network protocol to the database and the index of the table is in the row",
        "the router sends each packet of the network protocol to the database and the index of the table is in the "
        "column",
    ),
    (
        "pair3",
        "the yeast and the sugar and the flour and the water of the dough make the bread rise in the oven when you bake",
        "the yeast and the sugar and the flour and the water of the dough make the bread rise in the sun when you bake",
    ),
)
# a reference pair this close (1 - cosine) is "the same text" to the model: a served pair at one vector is no collision
COLLISION_MARGIN = 10.0  # the reference pair must be this many times farther apart than the collision bound


def variant(kind: str, text: str) -> str:
    """``text`` in upper case, lower case, title case, or with its spaces doubled, tabbed and padded."""
    if kind == "upper":
        return text.upper()
    if kind == "lower":
        return text.lower()
    if kind == "title":
        return text.title()
    if kind == "whitespace":
        words = text.split()
        return "  " + "  ".join(words[:2]) + "\t" + " ".join(words[2:-1]) + "\n " + words[-1] + " "
    raise ValueError(f"unknown variant {kind!r}; choose one of {', '.join(VARIANTS)}")


@dataclass(frozen=True)
class Probe:
    """One extra text: its id, role, text as given (no prefix), the canary text it varies and how (None: a pair)."""

    id: str
    role: str
    text: str
    of: str | None = None
    kind: str | None = None


def probe_texts(canary: dict[str, str]) -> list[Probe]:
    """The variants of the VARIED canary texts (one per kind unless it equals the text or an earlier variant) and
    the prefix pairs (documents)."""
    out: list[Probe] = []
    for cid, role in VARIED:
        seen = {canary[cid]}
        for kind in VARIANTS:
            text = variant(kind, canary[cid])
            if text not in seen:
                seen.add(text)
                out.append(Probe(f"{cid}.{kind}", role, text, of=cid, kind=kind))
    for pid, a, b in PREFIX_PAIRS:
        out += [Probe(f"{pid}a", "document", a), Probe(f"{pid}b", "document", b)]
    return out


@dataclass(frozen=True)
class ProbeVectors:
    probes: tuple[Probe, ...]
    served: np.ndarray  # at the contract's dimension
    reference: np.ndarray


def probe_vectors(ctx: CanaryContext) -> ProbeVectors:
    """The extra texts' served vectors (one request) and reference vectors, once per context."""

    def make() -> ProbeVectors:
        import numpy as np

        cs, c = ctx.canary_set(), ctx.contract
        ctx.served_vectors()  # a server that already failed the canary texts fails here at once, with that error
        probes = probe_texts(dict(zip(cs.ids, cs.texts, strict=True)))
        rendered = [c.render(p.role, p.text) for p in probes]
        served = ctx.client().embed(rendered, ids=[p.id for p in probes], batch_size=len(probes), sort_by_length=False)[
            :, : c.dim
        ]
        reference = np.zeros_like(served)
        ref = ctx.reference()
        for role in ("query", "document"):
            idx = [i for i, p in enumerate(probes) if p.role == role]
            if idx:
                reference[idx] = ref.embed([probes[i].text for i in idx], role)
        return ProbeVectors(tuple(probes), served, reference)

    return ctx.shared("invariance_probes", make)


def check_case_variants(ctx: CanaryContext) -> CheckOutcome:
    s = ctx.settings
    pv = probe_vectors(ctx)
    rows = [i for i, p in enumerate(pv.probes) if p.kind is not None]
    cos = row_cosine(pv.served[rows], pv.reference[rows])
    per = {pv.probes[i].id: round(float(x), 6) for i, x in zip(rows, cos, strict=True)}
    bad = [(pv.probes[i], float(x)) for i, x in zip(rows, cos, strict=True) if x < s.min_cosine]
    by_kind = {k: [p.id for p, _ in bad if p.kind == k] for k in VARIANTS}
    details: dict[str, Any] = {
        "threshold": s.min_cosine,
        "variants": len(rows),
        "per_text": per,
        "disagreeing": [p.id for p, _ in bad],
        "requests": 1,
    }
    if not bad:
        return CheckOutcome(
            "case_variants",
            True,
            f"case variants: {len(rows)} upper, lower, title and whitespace variants of {len(VARIED)} canary texts "
            f"each agree with the reference of that text (min cosine {min(per.values()):.5f} >= {s.min_cosine})",
            details,
        )
    kinds = [k for k in VARIANTS if by_kind[k]]
    whole = [k for k in kinds if len(by_kind[k]) == sum(p.kind == k for p in pv.probes)]
    worst, wc = min(bad, key=lambda pc: pc[1])
    named = (
        f"every {' and every '.join(whole)} variant departs: the server encodes {_kind_phrase(whole)} inputs "
        "unlike the model (Ollama#13942 gave every all-uppercase input one vector)"
        if whole
        else f"{', '.join(kinds)} variants depart"
    )
    return CheckOutcome(
        "case_variants",
        False,
        f"case variants: {len(bad)} of {len(rows)} variants disagree with the reference of that text; {named}; "
        f'worst {worst.id} "{snippet(worst.text)}" cosine {wc:.4f} < {s.min_cosine}; remedy: serve the model\'s own '
        "tokenizer (its normalizer and lower-casing as tokenizer.json declares) and an engine release without the "
        "case bug",
        details,
    )


def _kind_phrase(kinds: list[str]) -> str:
    words = {"upper": "all-uppercase", "lower": "all-lowercase", "title": "title-case", "whitespace": "extra-space"}
    return " and ".join(words[k] for k in kinds)


def check_distinct_inputs(ctx: CanaryContext) -> CheckOutcome:
    import numpy as np

    s, c, cs = ctx.settings, ctx.contract, ctx.canary_set()
    pv = probe_vectors(ctx)
    ids = [*cs.ids, *(p.id for p in pv.probes)]
    texts = [*cs.rendered(c), *(c.render(p.role, p.text) for p in pv.probes)]
    shown = [*cs.texts, *(p.text for p in pv.probes)]
    served = np.vstack([ctx.served_vectors()[:, : c.dim], pv.served]).astype(np.float64)
    ref = np.vstack([ctx.reference_vectors(), pv.reference]).astype(np.float64)
    served_cos, ref_cos = _cosines(served), _cosines(ref)
    bound = s.collision_cosine
    apart = 1.0 - COLLISION_MARGIN * (1.0 - bound)  # the reference pair must be below this to count as distinct
    pairs = []
    n = len(ids)
    for i in range(n):
        for j in range(i + 1, n):
            if texts[i] != texts[j] and served_cos[i, j] >= bound and ref_cos[i, j] < apart:
                pairs.append((i, j))
    distinct = sum(1 for i in range(n) for j in range(i + 1, n) if texts[i] != texts[j] and ref_cos[i, j] < apart)
    details: dict[str, Any] = {
        "texts": n,
        "pairs_checked": distinct,
        "collision_cosine": bound,
        "reference_below": apart,
        "collisions": [
            {
                "a": ids[i],
                "b": ids[j],
                "text_a": snippet(shown[i], 80),
                "text_b": snippet(shown[j], 80),
                "served_cosine": round(float(served_cos[i, j]), 8),
                "reference_cosine": round(float(ref_cos[i, j]), 6),
            }
            for i, j in pairs[:20]
        ],
        "requests": 0,  # the canary texts' and the variants' vectors, already served
    }
    if not pairs:
        return CheckOutcome(
            "distinct_inputs",
            True,
            f"distinct inputs: {n} texts ({distinct} pairs whose reference vectors differ): no two get one served "
            f"vector (served cosine < {bound})",
            details,
        )
    i, j = pairs[0]
    return CheckOutcome(
        "distinct_inputs",
        False,
        f"distinct inputs: {len(pairs)} collision(s): distinct texts get one served vector; first {ids[i]} "
        f'"{snippet(shown[i])}" and {ids[j]} "{snippet(shown[j])}" (served cosine {served_cos[i, j]:.6f} >= {bound}, '
        f"reference {ref_cos[i, j]:.4f}); the server answers some inputs with another input's vector (a cache or "
        "batch slot keyed by part of the text, a case-folding or cutting tokenizer); remedy: disable the engine's "
        "embedding or prefix cache and serve the model's own tokenizer",
        details,
    )


def _cosines(v: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(v, axis=1)
    unit = v / np.where(norms > 0, norms, 1.0)[:, None]
    out: np.ndarray = unit @ unit.T
    return out


CASE_VARIANTS = Check(
    name="case_variants",
    label="case variants",
    run=check_case_variants,
    thresholds=("min_cosine",),
    explanation="upper, lower, title and whitespace variants of three canary texts (one request) each agree with the "
    "reference of that very text: agreement, not invariance (Ollama#13942: every all-uppercase input got one vector)",
    example="case variants: 3 of 11 variants disagree with the reference of that text; every upper variant departs: "
    "the server encodes all-uppercase inputs unlike the model (Ollama#13942 gave every all-uppercase input one "
    'vector); worst q1.upper "HOW DOES A DATABASE COMMIT A TRANSACTION" cosine 0.4120 < 0.99; remedy: ...',
    stage="agreement",  # the variants agree with their references: wrong pooling fails them too
)

DISTINCT_INPUTS = Check(
    name="distinct_inputs",
    label="distinct inputs",
    run=check_distinct_inputs,
    thresholds=("collision_cosine",),
    explanation="no two distinct texts (the canary texts, their variants, and pairs sharing a long prefix) whose "
    "reference vectors differ get one served vector (a cosine at or above collision_cosine, 0.99999); no extra request",
    example='distinct inputs: 3 collision(s): distinct texts get one served vector; first pair1a "The quarterly '
    'report shows that revenue grew in every…" and pair1b "The quarterly report shows that revenue grew in every…" '
    "(served cosine 1.000000 >= 0.99999, reference 0.9712); the server answers some inputs with another input's "
    "vector ...",
    stage="agreement",
)
