"""The length ladder (issue 40): where a server's undeclared truncation cap lies, to the token.

A cap nobody declared (bge-m3 vectors frozen after 2,048 tokens of an 8,192-token context, Ollama#14259; hard
512-token cuts) is found by no fixed list of lengths. The ladder sends one real text cut to exactly the contract's
max length (its special tokens and prefix counted as the reference tokenizer adds them); a faithful server encodes
it as the reference does, and that one request is all the ladder costs. When it departs, the ladder bisects over
exact token counts between the longest canary text that agrees and that length, each step one request of the same
text cut shorter, until the last length that agrees and the first that departs are one token apart: the server
truncates at N tokens. The evidence is those two lengths and the cosine of the first departing text's served vector
against the reference cut at N (the text of N tokens: the texts are prefixes of one token stream). At most
:data:`MAX_REQUESTS` requests; a range is named when they run out first.

Agreement here is by relative difference (``|served - reference| / |reference|``) at a tolerance above the
server's own noise on the canary texts: one token more or less in a long text moves a mean-pooled vector by far
less than the canary's cosine threshold sees.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ....checks import Check, CheckOutcome
from ....checks.measure import is_input_rejection
from ....encode.http import EndpointHTTPError
from ....encode.secret import cut
from ....run import probes as texts

if TYPE_CHECKING:
    import numpy as np

    from ..context import CanaryContext

MAX_REQUESTS = 12  # the ladder's budget, its first request included
TOL_FLOOR = 1e-4  # relative difference below which a vector is the reference's, whatever the noise
TOL_CEILING = 0.02  # above this a vector departs, however noisy the server (the diagnosis's own tolerance)
NOISE_FACTOR = 4.0  # a departure is this many times the server's median relative difference on the canary texts
CALIBRATION_TOKENS = 16  # a short text measures the server's noise when the canary texts were refused
SHARED_KEY = "length_ladder"  # the context's memo of the ladder's finding, which the diagnosis reads


@dataclass(frozen=True)
class Cap:
    """The ladder's finding: texts of ``agrees`` tokens agree, of ``departs`` tokens depart (one apart: exact)."""

    agrees: int
    departs: int

    @property
    def exact(self) -> bool:
        return self.departs == self.agrees + 1


class ExactTexts:
    """Texts cut from one token stream (the canary's filler) to an exact count of model-input tokens, prefix and
    special tokens included as the reference tokenizer adds them; each a prefix of the longer ones."""

    def __init__(self, ctx: CanaryContext) -> None:
        self.ctx = ctx
        tokenizer = ctx.tokenizer()
        self.tokenizer = tokenizer
        stream = texts.filler(ctx.contract.max_length * 2)
        self.ids: list[int] = list(tokenizer(stream, add_special_tokens=False)["input_ids"])
        self.overhead = self.count("")

    def render(self, text: str) -> str:
        return self.ctx.contract.render("document", text)

    def count(self, text: str) -> int:
        counts = self.ctx.token_counts([self.render(text)])
        return counts[0] if counts else 0

    def text(self, n: int) -> tuple[str, int]:
        """A text whose model input has ``n`` tokens (or the nearest count the tokenizer allows) and its count."""
        m = max(1, n - self.overhead)
        text = self.tokenizer.decode(self.ids[:m], skip_special_tokens=False)
        best = (text, self.count(text))
        for _ in range(5):
            if best[1] == n:
                break
            m = max(1, m + n - best[1])
            text = self.tokenizer.decode(self.ids[:m], skip_special_tokens=False)
            got = self.count(text)
            if abs(got - n) >= abs(best[1] - n):
                break
            best = (text, got)
        return best


def _relative(served: np.ndarray, ref: np.ndarray) -> float:
    import numpy as np

    norm = float(np.linalg.norm(ref))
    return float(np.linalg.norm(served.astype(np.float64) - ref) / (norm if norm > 0 else 1.0))


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    import numpy as np

    d = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a.astype(np.float64), b) / d) if d > 0 else 0.0


def check_length_ladder(ctx: CanaryContext) -> CheckOutcome:
    c, cs = ctx.contract, ctx.canary_set()
    if ctx.tokenizer() is None:
        return CheckOutcome(
            "length_ladder", None, "length ladder: no reference tokenizer to cut texts to exact lengths"
        )
    exact = ExactTexts(ctx)
    client, ref = ctx.client(), ctx.reference()
    steps: list[dict[str, Any]] = []
    vectors: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # tokens -> (served, reference)
    refused: dict[int, str] = {}  # tokens -> what the server said refusing them
    tol = TOL_CEILING

    def probe(n: int) -> tuple[int, bool]:
        text, got = exact.text(n)
        try:
            served = client.embed([exact.render(text)], ids=[f"ladder{got}"], batch_size=1)[0, : c.dim]
        except EndpointHTTPError as exc:  # a server whose limit is below the text refuses it (vLLM: HTTP 400)
            if not is_input_rejection(exc.status):
                raise
            refused[got] = cut(str(exc), 200)
            steps.append({"tokens": got, "refused": exc.status, "agrees": False})
            return got, False
        reference = ref.embed([text], "document")[0]
        vectors[got] = (served, reference)
        d = _relative(served, reference)
        steps.append({"tokens": got, "relative_difference": float(f"{d:.3g}"), "agrees": d <= tol})
        return got, d <= tol

    try:
        served_canary = ctx.served_vectors()[:, : c.dim]
    except EndpointHTTPError as exc:  # the canary texts refused (a limit below them): start from a short text
        if not is_input_rejection(exc.status):
            raise
        short = min(CALIBRATION_TOKENS, c.max_length)
        got, _ = probe(short)
        if got in refused:
            raise
        rel = [_relative(*vectors[got])]
        agreeing_counts = [got]
    else:
        rel = [_relative(s, r) for s, r in zip(served_canary, ctx.reference_vectors(), strict=True)]
        agreeing_counts = ctx.token_counts(cs.rendered(c)) or []
    tol = min(TOL_CEILING, max(TOL_FLOOR, NOISE_FACTOR * statistics.median(rel)))
    for step in steps:  # the calibration probe, judged at the tolerance it gave
        step["agrees"] = step["relative_difference"] <= tol
    agreeing = [n for n, d in zip(agreeing_counts, rel, strict=True) if d <= tol]
    details: dict[str, Any] = {"max_length": c.max_length, "steps": steps}
    top, ok = probe(c.max_length)
    details["tolerance"] = float(f"{tol:.3g}")
    if ok:
        details["requests"] = len(steps)
        return CheckOutcome(
            "length_ladder",
            True,
            f"length ladder: a text of exactly {top} tokens (the contract's max_length {c.max_length}, special tokens "
            f"included) is encoded as the reference does (relative difference {steps[-1]['relative_difference']:.2g} "
            f"<= {tol:.2g}): no truncation cap below it; {len(steps)} request(s)",
            details,
        )
    low = max((n for n in agreeing if n < top), default=None)
    if low is None:
        details["requests"] = len(steps)
        return CheckOutcome(
            "length_ladder",
            None,
            f"length ladder: a text of {top} tokens departs, and so does every canary text: no length agrees to start "
            "from, so no truncation cap can be placed (vector agreement and the diagnosis say why)",
            details,
        )
    hi = top
    while hi - low > 1 and len(steps) < MAX_REQUESTS:
        got, ok = probe((low + hi) // 2)
        if not low < got < hi:  # the tokenizer cannot make a text strictly between: stop with the range
            break
        low, hi = (got, hi) if ok else (low, got)
    cap = Cap(low, hi)
    details.update(requests=len(steps), agrees=low, departs=hi, exact=cap.exact)
    if hi in refused:
        details["refused"] = refused[hi]
        what = f"more than {low}" if cap.exact else f"of {hi} (between {low + 1} and {hi})"
        return CheckOutcome(
            "length_ladder",
            False,
            f"length ladder: the server refuses texts of {what} tokens (the contract's max_length: {c.max_length}): "
            f"a text of {low} tokens agrees with the reference, one of {hi} is refused ({refused[hi]}) "
            f"({len(steps)} requests); it cannot embed every text the contract allows; fix: {_remedy(ctx, low)}",
            details,
        )
    # a cap keeps the first N tokens, and the texts are prefixes of one stream: every longer one gets one vector
    frozen = _relative(vectors[hi][0], vectors[top][0]) if hi in vectors else 0.0
    details["relative_difference_longest"] = float(f"{frozen:.3g}")
    if frozen > tol:
        return CheckOutcome(
            "length_ladder",
            False,
            f"length ladder: a text of {top} tokens departs from the reference, but the texts past {low} tokens do "
            f"not share one vector (the {hi}- and {top}-token texts differ by {frozen:.2g} > {tol:.2g}): not a "
            f"truncation cap; a fault that hits some requests or texts only (see repeated requests and the "
            f"diagnosis) ({len(steps)} requests)",
            details,
        )
    ctx.shared(SHARED_KEY, lambda: cap)
    evidence = ""
    if hi in vectors:
        served_hi, ref_hi = vectors[hi]
        cut_ref = vectors[low][1] if low in vectors else ref.embed([exact.text(low)[0]], "document")[0]
        details["cosine_departing"] = round(_cosine(served_hi, ref_hi), 6)
        details["cosine_against_cut"] = round(_cosine(served_hi, cut_ref), 6)
        details["relative_difference_against_cut"] = float(f"{_relative(served_hi, cut_ref):.3g}")
        evidence = (
            f"; the text of {hi} tokens has cosine {details['cosine_departing']:.6f} with its reference and "
            f"{details['cosine_against_cut']:.6f} with the reference cut at {low} tokens"
        )
    what = (
        f"the server truncates at {low} tokens"
        if cap.exact
        else f"the server truncates between {low} and {hi - 1} tokens"
    )
    return CheckOutcome(
        "length_ladder",
        False,
        f"length ladder: {what} (the contract's max_length: {c.max_length}): a text of {low} tokens agrees with the "
        f"reference, one of {hi} departs{evidence} ({len(steps)} requests); fix: {_remedy(ctx, low)}",
        details,
    )


def _remedy(ctx: CanaryContext, cap: int) -> str:
    from ....diagnose.engines import server_facts
    from ....diagnose.hypotheses import FACTORS

    facts = ctx.shared("server_facts", lambda: server_facts(ctx.probe_client(), ctx.known_served_model()))
    factor = next(f for f in FACTORS if f.field == "max_length")
    return factor.remedy_for(facts.engine, cap, ctx.contract)


LENGTH_LADDER = Check(
    name="length_ladder",
    label="length ladder",
    run=check_length_ladder,
    explanation="a real text cut to exactly the contract's max length (special tokens and prefix counted) is "
    "encoded as the reference does (1 request); when it departs, bisection over exact token counts (at most 12 "
    "requests) names the server's truncation cap to the token, with the last agreeing and first departing length and "
    "the engine's remedy (Ollama#14259: bge-m3 frozen after 2,048 of 8,192 tokens)",
    example="length ladder: the server truncates at 200 tokens (the contract's max_length: 256): a text of 200 tokens "
    "agrees with the reference, one of 201 departs; the text of 201 tokens has cosine 0.999871 with its reference and "
    "1.000000 with the reference cut at 200 tokens (8 requests); fix: llama-cpp-python: --n_ctx 256 ...",
    stage="truncation",
    diagnosed=True,  # issue 40: the ladder's cap joins the lengths the diagnosis tries
)
