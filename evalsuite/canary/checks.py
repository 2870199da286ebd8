"""The canary checks: served vectors and retrieval against the local reference of the same revision.

Each check is a function ``CanaryContext -> Verdict``. The pytest plugin makes one item per
name in :func:`check_names` and the CLI prints the same verdicts: both call :func:`run_check`.
Imports here stay light (no torch, faiss, ranx or transformers until a check runs).
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..errors import ContractError, EndpointError, SpecError
from . import texts
from .context import CanaryContext
from .settings import CanarySettings

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CanaryContext", "CanarySettings", "Verdict", "check_names", "run_check", "LABELS"]

LABELS = {
    "identity": "identity",
    "vector_agreement": "vector agreement",
    "norm_agreement": "norm agreement",
    "batch_invariance": "batch invariance",
    "retrieval_agreement": "retrieval agreement",
    "bad_input": "bad input",
    "matryoshka": "matryoshka",
    "auth": "auth",
}
TOP_K_OVERLAP = 10
UNNORMALIZED_NORM_TOL = 1e-2


@dataclass(frozen=True)
class Verdict:
    """One check's outcome. ``passed`` is None when the check does not apply (skipped)."""

    check: str
    passed: bool | None
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return {True: "PASS", False: "FAIL", None: "SKIP"}[self.passed]

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "passed": self.passed, "message": self.message,
                "details": self.details}


def check_names(settings: CanarySettings) -> list[str]:
    """The checks that apply to these settings, in the order they run."""
    names = ["identity", "vector_agreement", "norm_agreement", "batch_invariance", "retrieval_agreement",
             "bad_input"]
    if settings.dimensions:
        names.append("matryoshka")
    if settings.api_key_env:
        names.append("auth")
    return names


def checks_for_dataset(settings: CanarySettings, *, first: bool) -> list[str]:
    """The checks a session runs for one dataset: all of them for the first dataset, only the
    dataset-dependent ones (retrieval agreement) for the others."""
    names = check_names(settings)
    return names if first else [n for n in names if n == "retrieval_agreement"]


def run_check(name: str, ctx: CanaryContext) -> Verdict:
    """Run one check. An endpoint that breaks the contract gives a failed verdict naming what broke;
    a usage error (SpecError, ContractError) propagates."""
    if name not in _CHECKS:
        raise SpecError(f"unknown canary check {name!r}; known: {', '.join(_CHECKS)}")
    try:
        return _CHECKS[name](ctx)
    except EndpointError as exc:
        return Verdict(name, False, f"{LABELS[name]}: {exc}", {"error": type(exc).__name__})


# -- helpers --------------------------------------------------------------------------------------
def _row_cosine(a: "np.ndarray", b: "np.ndarray") -> "np.ndarray":
    import numpy as np

    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    denom = np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1)
    return np.sum(a64 * b64, axis=1) / np.where(denom > 0, denom, 1.0)


def _snippet(text: str, width: int = 50) -> str:
    t = " ".join(text.split())
    return t if len(t) <= width else t[: width - 1] + "…"


def _cosine_summary(cos: "np.ndarray", ids: tuple[str, ...] | list[str]) -> dict[str, Any]:
    worst = int(cos.argmin())
    return {"min": round(float(cos.min()), 6), "median": round(float(statistics.median(cos.tolist())), 6),
            "worst": ids[worst], "per_text": {i: round(float(c), 6) for i, c in zip(ids, cos)}}


def _is_input_rejection(status: int) -> bool:
    return 400 <= status < 500 and status not in (401, 403, 404, 405)


def _overlap(reference: dict[str, float], endpoint: dict[str, float], k: int = TOP_K_OVERLAP) -> float:
    """Share of the reference's top-k documents that the endpoint's top-k also holds."""
    ref_top = list(reference)[:k]
    return len(set(ref_top) & set(list(endpoint)[:k])) / max(1, len(ref_top))


def _json(resp: Any) -> Any:
    from ..encode.response import ResponseFormatError

    try:
        return resp.json()
    except ValueError:
        raise ResponseFormatError(f"HTTP {resp.status_code} with a body that is not JSON") from None


# -- 1. identity ----------------------------------------------------------------------------------
def check_identity(ctx: CanaryContext) -> Verdict:
    probe = ctx.probe_client()
    health: dict[str, Any] = {}
    healthy = None
    for url in probe.config.health_urls():
        try:
            status = probe.request("GET", url).status_code
        except EndpointError as exc:
            status = f"{type(exc).__name__}"
        health[url] = status
        if status == 200:
            healthy = url
            break
    served = ctx.served_model()
    details: dict[str, Any] = {"health": health, "served_model": served.name, "listed": list(served.listed),
                               "listed_by": served.source}
    if healthy is None:
        tried = ", ".join(f"{u} -> {s}" for u, s in health.items())
        return Verdict("identity", False, f"identity: health does not answer 200 ({tried})", details)
    if served.name not in served.listed:
        return Verdict("identity", False,
                       f"identity: served model {served.name!r} is not listed by {served.source} "
                       f"(it lists {', '.join(repr(m) for m in served.listed) or 'nothing'}); pass the served name "
                       "with --served-model, or the server loaded another model", details)
    vec = ctx.client().embed(["identity probe"])
    details["dimension"] = int(vec.shape[1])
    return Verdict("identity", True,
                   f"identity: {served.name!r} is listed by {served.source} and named in responses; "
                   f"health 200 at {healthy}; {vec.shape[1]} dimensions", details)


# -- 2. vector agreement --------------------------------------------------------------------------
def check_vector_agreement(ctx: CanaryContext) -> Verdict:
    s, c, cs = ctx.settings, ctx.contract, ctx.canary_set()
    served = ctx.served_vectors()[:, : c.dim]
    cos = _row_cosine(served, ctx.reference_vectors())
    summary = _cosine_summary(cos, cs.ids)
    by_role = {r: float(min(x for x, rr in zip(cos, cs.roles) if rr == r)) for r in set(cs.roles)}
    details = dict(summary, threshold=s.min_cosine, min_by_role={r: round(v, 6) for r, v in by_role.items()},
                   query_prefix=c.query_prefix, doc_prefix=c.doc_prefix, texts=len(cs.ids))
    below = int((cos < s.min_cosine).sum())
    if below:
        worst = cs.ids.index(summary["worst"])
        hint = ""
        bad_roles = [r for r, v in by_role.items() if v < s.min_cosine]
        if len(bad_roles) == 1 and len(by_role) == 2:
            prefix = c.query_prefix if bad_roles[0] == "query" else c.doc_prefix
            hint = (f"; only {bad_roles[0]} texts disagree: check the {bad_roles[0]} prefix "
                    f"({prefix!r} per the contract)")
        return Verdict("vector_agreement", False,
                       f"vector agreement: min cosine {summary['min']:.4f} < {s.min_cosine} on {summary['worst']} "
                       f"\"{_snippet(cs.texts[worst])}\" ({below} of {len(cos)} texts below; median "
                       f"{summary['median']:.4f}){hint}", details)
    return Verdict("vector_agreement", True,
                   f"vector agreement: {len(cos)} texts, min cosine {summary['min']:.5f} ({summary['worst']}), "
                   f"median {summary['median']:.5f} >= {s.min_cosine}", details)


# -- 3. norm agreement ----------------------------------------------------------------------------
def check_norm_agreement(ctx: CanaryContext) -> Verdict:
    import numpy as np

    from ..encode.response import NORM_TOL

    c, cs = ctx.contract, ctx.canary_set()
    raw = ctx.served_vectors()
    served = np.linalg.norm(raw if c.normalize else raw[:, : c.dim], axis=1)
    ref = np.linalg.norm(ctx.reference_vectors(), axis=1)
    rel = np.abs(served - ref) / np.where(ref > 0, ref, 1.0)
    tol = NORM_TOL if c.normalize else UNNORMALIZED_NORM_TOL
    worst = int(rel.argmax())
    details = {"normalize": c.normalize, "tolerance": tol,
               "served": {"min": round(float(served.min()), 6), "max": round(float(served.max()), 6)},
               "reference": {"min": round(float(ref.min()), 6), "max": round(float(ref.max()), 6)},
               "max_relative_difference": round(float(rel.max()), 6), "worst": cs.ids[worst]}
    span = (f"served norms {served.min():.4f}-{served.max():.4f}, reference {ref.min():.4f}-{ref.max():.4f}")
    if rel[worst] > tol:
        hint = ""
        if not c.normalize and abs(served[worst] - 1.0) < NORM_TOL:
            hint = "; the server normalizes but the contract says normalize=false (similarity dot)"
        return Verdict("norm_agreement", False,
                       f"norm agreement: served norm {served[worst]:.4f} vs reference {ref[worst]:.4f} on "
                       f"{cs.ids[worst]} (relative difference {rel[worst]:.4g} > {tol:g}); {span}{hint}", details)
    return Verdict("norm_agreement", True, f"norm agreement: {span} (max relative difference "
                   f"{rel.max():.2g} <= {tol:g})", details)


# -- 4. batch invariance --------------------------------------------------------------------------
def check_batch_invariance(ctx: CanaryContext) -> Verdict:
    import numpy as np

    s, cs = ctx.settings, ctx.canary_set()
    prefixed = cs.rendered(ctx.contract)
    order = list(range(len(prefixed)))
    random.Random(0).shuffle(order)
    client = ctx.client()
    shuffled = client.embed([prefixed[i] for i in order], ids=[cs.ids[i] for i in order],
                            batch_size=len(order), sort_by_length=False)
    batched = np.empty_like(shuffled)
    batched[order] = shuffled
    single = client.embed(prefixed, ids=list(cs.ids), batch_size=1)
    cos = _row_cosine(batched, single)
    summary = _cosine_summary(cos, cs.ids)
    details = dict(summary, threshold=s.batch_min_cosine, order=[cs.ids[i] for i in order])
    what = f"{len(cos)} texts in one shuffled request vs one request each"
    if summary["min"] < s.batch_min_cosine:
        return Verdict("batch_invariance", False,
                       f"batch invariance: {what}: min cosine {summary['min']:.5f} < {s.batch_min_cosine} on "
                       f"{summary['worst']}; the server's batching (padding or order) changes vectors", details)
    return Verdict("batch_invariance", True,
                   f"batch invariance: {what}: min cosine {summary['min']:.6f} >= {s.batch_min_cosine}", details)


# -- 5. retrieval agreement -----------------------------------------------------------------------
def check_retrieval_agreement(ctx: CanaryContext) -> Verdict:
    s, c = ctx.settings, ctx.contract
    ref = ctx.reference_result()
    diff = ref.contract.diff(c)
    if diff:
        raise ContractError("the reference result was computed under another contract than the canary's: "
                            + ref.contract.describe_diff(c, labels=("reference", "canary")))
    if ref.dataset.identity.sha256 != ctx.prepared.dataset.identity.sha256:
        raise ContractError("the reference result was computed on another dataset (sha256 "
                            f"{ref.dataset.identity.sha256[:12]} vs {ctx.prepared.dataset.identity.sha256[:12]})")
    ep = ctx.endpoint_result()
    metrics = [m for m in ref.metrics if m in ep.metrics]
    primary = "ndcg@10" if "ndcg@10" in metrics else metrics[0]
    deltas = {m: ep.metrics[m] - ref.metrics[m] for m in metrics}
    overlap = {qid: _overlap(ref.ranking.get(qid, {}), ep.ranking.get(qid, {})) for qid in ref.ranking}
    mean_overlap = sum(overlap.values()) / max(1, len(overlap))
    lowest = sorted(overlap, key=lambda q: (overlap[q], q))[:5]
    details = {
        "primary": primary, "tolerance": s.max_ndcg_delta,
        "metrics": {m: {"reference": round(ref.metrics[m], 6), "endpoint": round(ep.metrics[m], 6),
                        "delta": round(deltas[m], 6)} for m in metrics},
        "top10_overlap": {"mean": round(mean_overlap, 4), "lowest": {q: overlap[q] for q in lowest}},
        "queries": len(overlap), "documents": ctx.prepared.dataset.identity.n_documents,
        "endpoint_timing": ep.timing,
    }
    others = ", ".join(f"{m} {deltas[m]:+.4f}" for m in metrics if m != primary)
    tail = f"; others: {others}; mean top-{TOP_K_OVERLAP} overlap {mean_overlap:.3f}"
    head = f"{primary} endpoint {ep.metrics[primary]:.4f} vs reference {ref.metrics[primary]:.4f}"
    if abs(deltas[primary]) > s.max_ndcg_delta:
        worst = ", ".join(f"{q} ({overlap[q]:.1f})" for q in lowest[:3])
        return Verdict("retrieval_agreement", False,
                       f"retrieval agreement: |delta {primary}| {abs(deltas[primary]):.4f} > {s.max_ndcg_delta} "
                       f"({head}){tail}; lowest overlap: {worst}", details)
    return Verdict("retrieval_agreement", True,
                   f"retrieval agreement: {head}, delta {deltas[primary]:+.4f} within {s.max_ndcg_delta}{tail}",
                   details)


# -- 6. bad input ---------------------------------------------------------------------------------
def check_bad_input(ctx: CanaryContext) -> Verdict:
    from ..encode.response import parse_embeddings
    from ..vectors import finalize

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

    def reference_raw(text: str) -> "np.ndarray":
        ref = ctx.reference()
        pooled = ref.encoder.encode([text], poolings=[c.pooling], role="document")[c.pooling]
        return finalize(pooled, c.dim, c.normalize)

    # empty string: a 4xx, or (Infinity, TEI) the model's own vector for "" - never garbage
    resp = client.request("POST", url, json=client.payload([""]))
    details["empty_string"] = resp.status_code
    if _is_input_rejection(resp.status_code):
        notes.append(f"empty string -> HTTP {resp.status_code}")
    elif resp.status_code == 200:
        vec = parse_embeddings(_json(resp), ["item empty-string \"\""], client.expect)
        cos = float(_row_cosine(vec[:, : c.dim], reference_raw(""))[0])
        details["empty_string_cosine"] = round(cos, 6)
        if cos >= s.min_cosine:
            notes.append(f"empty string -> HTTP 200 with the reference's vector for '' (cos {cos:.4f})")
        else:
            failures.append(f"empty string -> HTTP 200 with a vector unlike the reference's for '' "
                            f"(cos {cos:.4f} < {s.min_cosine})")
    else:
        failures.append(f"empty string -> HTTP {resp.status_code}, expected a 4xx or the reference's vector")
    alive("empty string")

    # empty list: must be refused
    resp = client.request("POST", url, json=client.payload([]))
    details["empty_list"] = resp.status_code
    if _is_input_rejection(resp.status_code):
        notes.append(f"empty list -> HTTP {resp.status_code}")
    else:
        failures.append(f"empty list -> HTTP {resp.status_code}, expected a 4xx")
    alive("empty list")

    # over-long input: refused, or truncated exactly as the contract declares
    doc_id, text = texts.over_limit_document(c.max_length)
    sent = c.render("document", text)
    resp = client.request("POST", url, json=client.payload([sent]))
    details["over_long"] = {"status": resp.status_code, "words": len(text.split()), "max_length": c.max_length,
                            "truncation": c.truncation}
    if _is_input_rejection(resp.status_code):
        notes.append(f"over-long input (~{len(text.split())} words, max_length {c.max_length}) -> "
                     f"HTTP {resp.status_code} (refused: chunk long documents before indexing)")
    elif resp.status_code == 200 and c.truncation == "reject":
        failures.append("over-long input -> HTTP 200: the server truncates silently, but the contract's "
                        "truncation policy is 'reject'")
    elif resp.status_code == 200:
        vec = parse_embeddings(_json(resp), [f"item {doc_id} (over-long)"], client.expect)
        cos = float(_row_cosine(vec[:, : c.dim], ctx.reference().embed_documents([text]))[0])
        details["over_long"]["cosine"] = round(cos, 6)
        if cos >= s.min_cosine:
            notes.append(f"over-long input -> truncated like the contract ({c.max_length} tokens, cos {cos:.4f})")
        else:
            failures.append(f"over-long input -> HTTP 200 with a vector unlike the reference truncated at "
                            f"{c.max_length} tokens (cos {cos:.4f} < {s.min_cosine}): the server truncates at "
                            "another length")
    else:
        failures.append(f"over-long input -> HTTP {resp.status_code}, expected a 4xx or truncation")
    alive("over-long input")

    if failures:
        return Verdict("bad_input", False, "bad input: " + "; ".join(failures), details)
    return Verdict("bad_input", True, "bad input: " + "; ".join(notes) + "; the server answered after each",
                   details)


# -- 7. Matryoshka via `dimensions` ---------------------------------------------------------------
def check_matryoshka(ctx: CanaryContext) -> Verdict:
    import numpy as np

    from ..encode.response import NORM_TOL

    s, c, cs = ctx.settings, ctx.contract, ctx.canary_set()
    if not s.dimensions:
        return Verdict("matryoshka", None, "matryoshka: no --canary-dimensions given", {})
    declared = ctx.prepared.model.matryoshka_dims
    for d in s.dimensions:
        if d > ctx.hidden_size:
            raise SpecError(f"--canary-dimensions {d} exceeds the model's output dimension {ctx.hidden_size}")
        if declared and d != ctx.hidden_size and d not in declared:
            raise SpecError(f"--canary-dimensions {d} is not one of the Matryoshka dimensions the model declares "
                            f"{list(declared)}")
    client = ctx.client()
    prefixed = cs.rendered(c)
    notes, failures = [], []
    details: dict[str, Any] = {}
    for d in s.dimensions:
        served = client.embed(prefixed, ids=list(cs.ids), dimensions=d, check_norm=False)
        norms = np.linalg.norm(served, axis=1)
        cos = _row_cosine(served, ctx.reference_vectors(dim=d))
        summary = _cosine_summary(cos, cs.ids)
        details[str(d)] = {"norm_min": round(float(norms.min()), 6), "norm_max": round(float(norms.max()), 6),
                           "cosine_min": summary["min"], "cosine_median": summary["median"],
                           "worst": summary["worst"]}
        direction = f"min cosine {summary['min']:.5f} vs the reference's truncate-and-renormalize"
        if summary["min"] < s.min_cosine:
            failures.append(f"dimensions={d}: {direction} < {s.min_cosine} on {summary['worst']}")
        elif c.normalize and np.abs(norms - 1.0).max() > NORM_TOL:
            failures.append(f"dimensions={d}: norms {norms.min():.4f}-{norms.max():.4f}, but the contract says "
                            "normalized: the server truncates without re-normalizing (Infinity does); "
                            f"re-normalize on the client or do not use server-side dimensions ({direction})")
        else:
            notes.append(f"dimensions={d}: {d} values, norms {norms.min():.4f}-{norms.max():.4f}, {direction}")
    bad = ctx.hidden_size + 1
    resp = client.request("POST", client.config.embeddings_url, json=client.payload(["invalid dimension"], bad))
    details["invalid_dimension"] = {"dimensions": bad, "status": resp.status_code}
    if _is_input_rejection(resp.status_code):
        notes.append(f"dimensions={bad} -> HTTP {resp.status_code}")
    else:
        failures.append(f"dimensions={bad} (over the model's {ctx.hidden_size}) -> HTTP {resp.status_code}, "
                        "expected a 4xx")
    if failures:
        return Verdict("matryoshka", False, "matryoshka: " + "; ".join(failures), details)
    return Verdict("matryoshka", True, "matryoshka: " + "; ".join(notes), details)


# -- 8. auth --------------------------------------------------------------------------------------
def check_auth(ctx: CanaryContext) -> Verdict:
    import secrets

    from ..encode.endpoint import Secret

    if not ctx.settings.api_key_env:
        return Verdict("auth", None, "auth: no --api-key-env configured", {})
    served = ctx.served_model()
    details: dict[str, Any] = {}
    failures, notes = [], []
    for case, key in (("no key", None), ("a wrong key", Secret("evalsuite-wrong-" + secrets.token_hex(8)))):
        with ctx.make_client(model=served.name, models=served.aliases, api_key=key, max_retries=0) as probe:
            resp = probe.request("POST", probe.config.embeddings_url, json=probe.payload(["auth probe"]))
        details[case] = resp.status_code
        if resp.status_code in (401, 403):
            notes.append(f"{case} -> HTTP {resp.status_code}")
        else:
            failures.append(f"a request with {case} got HTTP {resp.status_code}, expected 401: the server does "
                            "not enforce the API key" if resp.status_code == 200 else
                            f"a request with {case} got HTTP {resp.status_code}, expected 401")
    ctx.client().embed(["auth probe"])  # the configured key works
    if failures:
        return Verdict("auth", False, "auth: " + "; ".join(failures), details)
    return Verdict("auth", True, "auth: " + ", ".join(notes) + "; the configured key is accepted", details)


_CHECKS: dict[str, Callable[[CanaryContext], Verdict]] = {
    "identity": check_identity,
    "vector_agreement": check_vector_agreement,
    "norm_agreement": check_norm_agreement,
    "batch_invariance": check_batch_invariance,
    "retrieval_agreement": check_retrieval_agreement,
    "bad_input": check_bad_input,
    "matryoshka": check_matryoshka,
    "auth": check_auth,
}
