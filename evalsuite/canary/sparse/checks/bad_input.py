"""What a served sparse endpoint does with input it should refuse, answer empty or truncate: an empty string, an
empty list of inputs, a text about three times the contract's max length. A 4xx refusing the input passes; so does
a sound answer (an empty string: the reference's vector of it; an empty list: no vectors; an over-long text: the
reference's vector of it truncated to max_length). A 5xx, a dropped connection or a broken answer fails."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....base.errors import EndpointError
from ....checks import Check, CheckOutcome
from ....checks.measure import is_input_rejection
from ..compare import compare

if TYPE_CHECKING:
    from ..context import SparseCanaryContext


def _probe(ctx: SparseCanaryContext, name: str, batch: list[str]) -> tuple[bool, str]:
    """(sound, what happened) for one bad request."""
    from ....encode.sparse_endpoint import parse_sparse, request_sparse

    client, s = ctx.client(), ctx.settings
    try:
        resp = request_sparse(client, batch, s.api, what=name)
        if is_input_rejection(resp.status_code):
            return True, f"{name} -> HTTP {resp.status_code} (refused)"
        if resp.status_code != 200:
            return False, f"{name} -> HTTP {resp.status_code} (expected a 4xx refusal or a sound answer)"
        got = parse_sparse(
            resp.json(),
            batch,
            s.api,
            vocab_size=ctx.encoder.head.vocab_size,
            token_ids=ctx.encoder.token_ids,
            specials=ctx.encoder.special_ids(),
            where=resp.what,
        )
    except EndpointError as exc:
        return False, f"{name} -> {exc}"
    if not batch:
        return True, f"{name} -> HTTP 200 with no vectors"
    fit = compare(got[0], ctx.encoder.encode(batch)[0], edge=s.weight_tol)
    if fit.overlap < s.min_overlap or fit.shared_diff > s.weight_tol:
        return False, (
            f"{name} -> a vector unlike the reference's (token overlap {fit.overlap:.3f}, max weight difference "
            f"{fit.shared_diff:.3g}; the reference truncates to max_length {ctx.contract.max_length} tokens)"
        )
    return True, f"{name} -> HTTP 200, the reference's vector ({len(got[0][0])} active ids)"


def check_sparse_bad_input(ctx: SparseCanaryContext) -> CheckOutcome:
    from ....run.probes import over_limit_document

    over = ctx.contract.render("document", over_limit_document(ctx.contract.max_length)[1])
    results = [
        _probe(ctx, "empty string", [ctx.contract.render("query", "")]),
        _probe(ctx, "empty list of inputs", []),
        _probe(ctx, "over-long text", [over]),
    ]
    failures = [line for ok, line in results if not ok]
    details = {"accepted": [line for ok, line in results if ok], "failures": failures}
    if failures:
        return CheckOutcome("sparse_bad_input", False, "bad input: " + "; ".join(failures), details)
    return CheckOutcome("sparse_bad_input", True, "bad input: " + "; ".join(line for _, line in results), details)


SPARSE_BAD_INPUT: Check[SparseCanaryContext] = Check(
    name="sparse_bad_input",
    label="bad input",
    run=check_sparse_bad_input,
    thresholds=("min_overlap", "weight_tol"),
    explanation="an empty string, an empty list of inputs, an over-long text: each refused (4xx) or answered "
    "soundly (the reference's vector; none; the reference's vector truncated to max_length); a 5xx or a broken "
    "answer fails",
    example="bad input: empty list of inputs -> HTTP 500 (expected a 4xx refusal or a sound answer)",
    stage="truncation",
)
