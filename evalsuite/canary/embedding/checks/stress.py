"""Inputs known to stress a reduced-precision engine (issue 40): a NaN, an inf or an all-zero vector, or a vector unlike
the reference's, for one particular input is named with that input.

fp16 engines have shipped NaN vectors for particular texts only (TEI#644, Qwen3-Embedding#186, Ollama#13572): very
long runs of one token, long numbers, rare scripts. The texts go in one request; when the answer breaks (a
non-finite or zero vector refuses the whole response), each text is sent again on its own, so every bad one is named
(at most one request per text, only then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....checks import Check, CheckOutcome
from ....checks.measure import row_cosine, snippet
from ....encode.response import NonFiniteVector, ZeroVector

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..context import CanaryContext

REPEAT_SHARE = 0.8  # the repeated-token text fills this share of the contract's max length
DIGITS = "31415926535897932384626433832795028841971693993751058209749445923078164062862089986280348253421170679"
RARE_SCRIPTS: tuple[tuple[str, str], ...] = (
    ("s_tamil", "தமிழ் ஒரு தொன்மையான செம்மொழி, அதன் இலக்கியம் இரண்டாயிரம் ஆண்டுகள் பழமையானது"),
    ("s_georgian", "ქართული ენა ქართველურ ენათა ოჯახს მიეკუთვნება და საკუთარი დამწერლობა აქვს"),
    ("s_amharic", "አማርኛ የኢትዮጵያ የሥራ ቋንቋ ሲሆን በግዕዝ ፊደል ይጻፋል"),
    ("s_math", "𝕿𝖍𝖊 𝖖𝖚𝖎𝖈𝖐 𝖇𝖗𝖔𝖜𝖓 𝖋𝖔𝖝 ∀x∈ℝ: ∫₀^∞ e^{-x²} dx = √π/2 ≠ ∑ᵢ ℵ₀"),
    ("s_emoji", "👩‍👩‍👧‍👦🏳️‍🌈🧑🏽‍🚀 ⚠️ 🇺🇳 🫠🫠🫠 the family flag, astronaut and melting faces"),
    ("s_zalgo", "Z̷̢͙a̸̛͉l̵̠̈g̶̱̏ö̷́ͅ t̴͓̾e̸̪͐x̵̣͆t̶̰̿ with zero\u200bwidth\u200cjoiners\u200d and\u00adsoft hyphens"),
)


def stress_texts(max_length: int, tokens: Callable[[str], int] | None = None) -> list[tuple[str, str]]:
    """(id, text) of the stress probes: one token repeated to ~80% of ``max_length``, a long number, and rare
    scripts; when ``tokens`` counts a text (as rendered and tokenized for the contract) beyond ``max_length``, it is
    cut until it fits (a server that refuses over-long inputs refuses the whole request otherwise: a small or
    byte-level vocabulary spends many tokens on a rare script)."""
    n = max(1, int(max_length * REPEAT_SHARE) - 4)
    repeated = " ".join(["the"] * n)
    if tokens is not None:
        while n > 1 and tokens(repeated) > max_length:
            n = max(1, n * 3 // 4)
            repeated = " ".join(["the"] * n)
    number = DIGITS[: max(8, min(len(DIGITS), max_length))]
    probes = [("s_repeat", repeated), ("s_number", number), *RARE_SCRIPTS]
    if tokens is None:
        return probes
    return [(i, t if i == "s_repeat" else _fit(t, max_length, tokens)) for i, t in probes]


def _fit(text: str, max_length: int, tokens: Callable[[str], int]) -> str:
    """``text`` cut by characters (a quarter at a time, never below 8) until ``tokens`` counts at most ``max_length``."""
    while len(text) > 8 and tokens(text) > max_length:
        text = text[: max(8, len(text) * 3 // 4)]
    return text


def check_stress_inputs(ctx: CanaryContext) -> CheckOutcome:
    import numpy as np

    s, c = ctx.settings, ctx.contract
    probes = stress_texts(c.max_length, lambda t: (ctx.token_counts([c.render("document", t)]) or [0])[0])
    ids, texts = [i for i, _ in probes], [t for _, t in probes]
    rendered = [c.render("document", t) for t in texts]
    client = ctx.client()
    ctx.served_vectors()  # a server that already failed the canary texts fails here at once, with that error
    reference = ctx.reference().embed(texts, "document")
    broken: dict[str, str] = {}
    served = np.full((len(texts), c.dim), np.nan, dtype=np.float32)
    requests = 1
    try:
        served[:] = client.embed(rendered, ids=ids, batch_size=len(texts), sort_by_length=False)[:, : c.dim]
    except (NonFiniteVector, ZeroVector):  # one text broke the answer: ask for each on its own to name them all
        for k, text in enumerate(rendered):
            requests += 1
            try:
                served[k] = client.embed([text], ids=[ids[k]], batch_size=1)[:, : c.dim]
            except NonFiniteVector as exc:
                broken[ids[k]] = f"non-finite vector ({exc})"
            except ZeroVector:
                broken[ids[k]] = "all-zero vector"
    ok = [k for k in range(len(ids)) if ids[k] not in broken]
    cos = row_cosine(served[ok], reference[ok]) if ok else np.zeros(0)
    low = [(ids[k], float(x)) for k, x in zip(ok, cos, strict=True) if x < s.min_cosine]
    lengths = dict(zip(ids, (len(t) for t in texts), strict=True))
    details: dict[str, Any] = {
        "texts": len(ids),
        "requests": requests,
        "dtype": c.dtype,
        "threshold": s.min_cosine,
        "per_text": {ids[k]: round(float(x), 6) for k, x in zip(ok, cos, strict=True)},
        "broken": {i: {"what": w, "characters": lengths[i]} for i, w in broken.items()},
        "snippets": {i: snippet(t, 60) for i, t in probes},
    }
    # a vector that departs for one of these texts is the server's tokenizer splitting it its own way (llama.cpp's
    # WPM tokenizer on long digit runs and Tamil: cosine 0.21 and 0.54, f32), said as a warning: what fails is a
    # vector that is not one (NaN, inf, all zero), for a particular input
    warned = [f'{i} "{snippet(dict(probes)[i])}": cosine {x:.4f} < {s.min_cosine}' for i, x in low]
    if warned:
        details["warnings"] = [
            "the server encodes these texts unlike the reference (its tokenizer splits them its own way): "
            + "; ".join(warned)
        ]
    if not broken:
        shown = f"min cosine {float(cos.min()):.5f}" if len(cos) else "no vector"
        return CheckOutcome(
            "stress_inputs",
            True,
            f"stress inputs: {len(ids)} texts that stress reduced precision (a repeated token, a long number, rare "
            f"scripts) give finite, non-zero vectors ({shown})"
            + (f"; warning: {details['warnings'][0]}" if warned else ""),
            details,
        )
    said = [f'{i} "{snippet(dict(probes)[i])}" ({lengths[i]} characters): {w}' for i, w in broken.items()]
    return CheckOutcome(
        "stress_inputs",
        False,
        f"stress inputs: {len(broken)} of {len(ids)} texts get no usable vector: {'; '.join(said)} (dtype "
        f"{c.dtype}); the engine breaks on particular inputs (fp16 overflow: TEI#644, Ollama#13572); remedy: serve "
        f"in the contract's dtype ({c.dtype}) or bfloat16 rather than float16, and upgrade past the engine's fix",
        details,
    )


STRESS_INPUTS = Check(
    name="stress_inputs",
    label="stress inputs",
    run=check_stress_inputs,
    thresholds=("min_cosine",),
    explanation="texts known to break fp16 engines (one token repeated to 80% of the max length, a long number, "
    "rare scripts, emoji and combining marks; one request) give finite, non-zero vectors; a broken one is named with "
    "its length (TEI#644, Qwen3-Embedding#186, Ollama#13572); one unlike the reference is a warning (a tokenizer "
    "splitting it its own way)",
    example='stress inputs: 1 of 8 texts get no usable vector: s_repeat "the the the the the the the the the the the the the…" '
    "(1019 characters): non-finite vector (...); the engine breaks on particular inputs ...",
    stage="batch",
)
