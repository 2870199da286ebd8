"""The reranker canary's bad-input check: what a served reranker does with requests it should refuse or truncate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....base.errors import EvalsuiteError
from ....checks import Check, CheckOutcome

if TYPE_CHECKING:
    from ..context import RerankCanaryContext


def bad_input(ctx: RerankCanaryContext) -> CheckOutcome:
    """An empty documents list must be refused (4xx) or answered with no results; an over-long pair must be
    refused (4xx) or scored like the reference truncates it. A 5xx, a dropped connection or a broken answer fails."""
    from ....rerank.twostage import top_ids

    label = "bad input"
    notes: list[str] = []
    failures: list[str] = []
    q = next(iter(ctx.candidates))
    query = ctx.first.dataset.queries[q]
    try:
        resp = ctx.client.post(query, [], what="empty documents list")
        if 400 <= resp.status_code < 500:
            notes.append(f"empty documents list -> HTTP {resp.status_code}")
        elif resp.status_code == 200:
            from ....rerank.shapes import parse_scores

            parse_scores(resp.json(), 0, ctx.client.api, where=resp.what)
            notes.append("empty documents list -> HTTP 200 with no results")
        else:
            failures.append(f"empty documents list -> HTTP {resp.status_code} (a server error; expected a 4xx)")
    except EvalsuiteError as exc:
        failures.append(f"empty documents list -> {exc}")
    doc_id = top_ids(ctx.first.ranking, q, 1)[0]
    long_doc = (ctx.first.dataset.corpus[doc_id] + " ") * (ctx.contract.max_length // 2 + 8)
    try:
        resp = ctx.client.post(query, [long_doc], what="over-long pair")
        if 400 <= resp.status_code < 500:
            notes.append(f"over-long pair -> HTTP {resp.status_code} (refused)")
        elif resp.status_code == 200:
            from ....rerank.contract import activate
            from ....rerank.shapes import parse_scores

            got, _ = parse_scores(resp.json(), 1, ctx.client.api, where=resp.what)
            ref = float(activate(ctx.reference.logits([(query, long_doc)]), ctx.compare_activation)[0])
            if abs(float(got[0]) - ref) <= ctx.settings.score_tol:
                notes.append(f"over-long pair -> truncated like the reference ({ctx.contract.max_length} tokens)")
            else:
                failures.append(
                    f"over-long pair -> score {got[0]:.6g}, the reference truncated to "
                    f"{ctx.contract.max_length} tokens gives {ref:.6g}"
                )
        else:
            failures.append(f"over-long pair -> HTTP {resp.status_code} (a server error; expected truncation or a 4xx)")
    except EvalsuiteError as exc:
        failures.append(f"over-long pair -> {exc}")
    details = {"accepted": notes, "failures": failures}
    if failures:
        return CheckOutcome("bad_input", False, f"{label}: " + "; ".join(failures), details)
    return CheckOutcome("bad_input", True, f"{label}: " + "; ".join(notes), details)


RERANK_BAD_INPUT: Check[RerankCanaryContext] = Check(
    name="bad_input",
    label="bad input",
    explanation="an empty documents list (a 4xx or no results), an over-long pair (a 4xx or truncated like the "
    "reference)",
    example="bad input: empty documents list -> HTTP 500 (a server error; expected a 4xx)",
    run=bad_input,
    thresholds=("score_tol",),
    stage="truncation",  # empty inputs and over-long ones
)
