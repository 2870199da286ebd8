"""Inputs a server must refuse or handle as the contract says: an empty string, an empty list, an over-long text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....base.errors import EndpointError
from ....checks import Check, CheckOutcome
from ....checks.measure import is_input_rejection, row_cosine
from ....encode.response import ZeroVector
from ....run import probes as texts

if TYPE_CHECKING:
    import numpy as np

    from ....encode.body import EndpointResponse
    from ..context import CanaryContext


def check_bad_input(ctx: CanaryContext) -> CheckOutcome:
    import numpy as np

    from ....retrieval.vectors import finalize

    s, c = ctx.settings, ctx.contract
    client = ctx.client()
    url = client.config.embeddings_url
    notes: list[str] = []
    failures: list[str] = []
    details: dict[str, Any] = {}

    def alive(after: str) -> None:
        try:
            client.embed(["are you still there"])
        except EndpointError as exc:
            failures.append(f"the server stopped answering after the {after}: {exc}")

    def reference_raw(text: str) -> np.ndarray:
        ref = ctx.reference()
        pooled = ref.encoder.encode([text], poolings=[c.pooling], role="document")[c.pooling]
        return finalize(pooled, c.dim, c.normalize)

    # empty string: a 4xx, or (Infinity, TEI) the model's own vector for "" - never garbage
    resp = client.request("POST", url, json=client.payload([""]), what="the empty-string probe")
    details["empty_string"] = resp.status_code
    if is_input_rejection(resp.status_code):
        notes.append(f"empty string -> HTTP {resp.status_code}")
    elif resp.status_code == 200:
        try:
            vec = client.parse_response(resp, ['item empty-string ""'])[:, : c.dim]
        except ZeroVector:  # the parser refuses a zero vector: for "" it is an answer to judge, not a transport error
            vec = np.zeros((1, c.dim), dtype=np.float32)
        ok, said = _empty_string_answer(vec, reference_raw(""), s.min_cosine, c.doc_prefix, details)
        (notes if ok else failures).append(said)
    else:
        failures.append(
            f"empty string -> HTTP {resp.status_code}{_why(resp)}, expected a 4xx refusing it or the reference's vector"
        )
    alive("empty string")

    # empty list: must be refused (a 4xx), or at least answered with an error object that returns nothing
    resp = client.request("POST", url, json=client.payload([]), what="the empty-list probe")
    details["empty_list"] = resp.status_code
    if is_input_rejection(resp.status_code):
        notes.append(f"empty list -> HTTP {resp.status_code}")
    elif resp.status_code == 500 and _why(resp):
        warning = (
            f"empty list -> HTTP 500{_why(resp)}: the engine fails on an empty batch instead of refusing it with a "
            "4xx; no vector came back (evalsuite's client never sends an empty batch: keep yours from sending one)"
        )
        details["warnings"] = [warning]
        notes.append("warning: " + warning)
    else:
        failures.append(f"empty list -> HTTP {resp.status_code}{_why(resp)}, expected a 4xx refusing it")
    alive("empty list")

    # over-long input: refused, or truncated exactly as the contract declares
    doc_id, text = texts.over_limit_document(c.max_length)
    sent = c.render("document", text)
    resp = client.request("POST", url, json=client.payload([sent]), what="the over-long input probe")
    details["over_long"] = {
        "status": resp.status_code,
        "words": len(text.split()),
        "max_length": c.max_length,
        "truncation": c.truncation,
    }
    if is_input_rejection(resp.status_code):
        notes.append(
            f"over-long input (~{len(text.split())} words, max_length {c.max_length}) -> "
            f"HTTP {resp.status_code} (refused: chunk long documents before indexing)"
        )
    elif resp.status_code == 200 and c.truncation == "reject":
        failures.append(
            "over-long input -> HTTP 200: the server truncates silently, but the contract's "
            "truncation policy is 'reject'"
        )
    elif resp.status_code == 200:
        vec = client.parse_response(resp, [f"item {doc_id} (over-long)"])
        cos = float(row_cosine(vec[:, : c.dim], ctx.reference().embed_documents([text]))[0])
        details["over_long"]["cosine"] = round(cos, 6)
        if cos >= s.min_cosine:
            notes.append(f"over-long input -> truncated like the contract ({c.max_length} tokens, cos {cos:.4f})")
        else:
            failures.append(
                f"over-long input -> HTTP 200 with a vector unlike the reference truncated at "
                f"{c.max_length} tokens (cos {cos:.4f} < {s.min_cosine}): {_over_long_cause(ctx)}"
            )
    else:
        failures.append(
            f"over-long input -> HTTP {resp.status_code}{_why(resp)}, expected a 4xx refusing it or truncation"
        )
    alive("over-long input")

    if failures:
        warned = ["warning: " + w for w in details.get("warnings", [])]
        return CheckOutcome("bad_input", False, "bad input: " + "; ".join(failures + warned), details)
    return CheckOutcome(
        "bad_input", True, "bad input: " + "; ".join(notes) + "; the server answered after each", details
    )


def _over_long_cause(ctx: CanaryContext) -> str:
    """Another truncation length explains an over-long text's vector only when the canary texts that disagree
    are the long ones (a third of the texts, at least, are shorter than any that disagrees); when short texts
    disagree too (other pooling, normalization, prefixes) the cut is not the first cause."""
    cs, threshold = ctx.canary_set(), ctx.settings.min_cosine
    try:
        cos = row_cosine(ctx.served_vectors()[:, : ctx.contract.dim], ctx.reference_vectors())
    except EndpointError as exc:
        return f"the canary texts fail too ({type(exc).__name__}), so truncation is not the first cause"
    counts = ctx.token_counts(cs.rendered(ctx.contract)) or [len(t.split()) for t in cs.texts]
    bad = [n for n, c in zip(counts, cos, strict=True) if c < threshold]
    if not bad or 3 * sum(n < min(bad) for n in counts) >= len(counts):
        return "the server truncates at another length"
    return (
        f"canary texts of {min(bad)} tokens disagree too (min cosine {float(cos.min()):.4f}), so truncation is "
        "not the first cause: see vector agreement and the diagnosis"
    )


def _empty_string_answer(
    vec: np.ndarray, reference: np.ndarray, min_cosine: float, doc_prefix: str, details: dict[str, Any]
) -> tuple[bool, str]:
    """Judge a served vector for "": the reference's vector (cosine), or an all-zero vector where the reference's
    is zero too (the model's own answer: e.g. a decoder whose EOS embedding is zero). An all-zero vector where the
    reference's is not is a departure named with its remedy: the engine pooled no token (it added no EOS or [CLS]
    to the empty input)."""
    import numpy as np

    if not np.any(vec):
        details["empty_string_zero_vector"] = True
        if not np.any(reference):
            return True, "empty string -> HTTP 200 with an all-zero vector, as the reference gives for ''"
        where = f" (with the document prefix {doc_prefix!r})" if doc_prefix else ""
        return False, (
            f"empty string -> HTTP 200 with an all-zero vector, but the reference's vector for ''{where} is not "
            "zero: the engine pooled no token for it (no EOS or [CLS] added to an empty input); remedy: keep empty "
            "texts away from the server (--empty-docs skip, --empty-queries skip) or serve the model with a "
            "tokenizer that adds its special tokens to every input"
        )
    cos = float(row_cosine(vec, reference)[0])
    details["empty_string_cosine"] = round(cos, 6)
    if cos >= min_cosine:
        return True, f"empty string -> HTTP 200 with the reference's vector for '' (cos {cos:.4f})"
    return False, f"empty string -> HTTP 200 with a vector unlike the reference's for '' (cos {cos:.4f} < {min_cosine})"


def _why(resp: EndpointResponse) -> str:
    """The server's own words for an answer that is neither a vector nor a refusal of the input (cut)."""
    if resp.status_code == 200:
        return ""
    from ....encode.response import ResponseFormatError, load_json, server_error_message

    try:
        said = server_error_message(load_json(resp.content, resp.what))
    except ResponseFormatError:
        said = None
    return f" ({said})" if said else ""


BAD_INPUT = Check(
    name="bad_input",
    label="bad input",
    run=check_bad_input,
    thresholds=("min_cosine",),
    explanation="an empty string gets a 4xx or the reference's vector for it; an empty list gets a 4xx (an HTTP "
    "500 with an error object passes with a warning: nothing came back); an "
    "over-long text gets a 4xx or is truncated at the contract's max length (refused when the contract "
    "says truncation 'reject'); the server still answers after each",
    example="bad input: empty list -> HTTP 200, expected a 4xx; over-long input -> HTTP 200 with a vector unlike "
    "the reference truncated at 512 tokens (cos 0.9012 < 0.99): the server truncates at another length",
    stage="truncation",  # empty inputs and over-long ones; the over-long one is what fails it most
    diagnosed=True,
)
