"""Who answers: the served model's identity and health, and whether the API key is enforced."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....base.errors import EndpointError
from ....checks import Check, CheckOutcome
from ....diagnose.engines import NO_HEALTH_ROUTE, server_facts
from ....encode.secret import cut
from ....encode.served import quote_names

LISTED_IN_DETAILS = 20  # model names kept in canary.json (a server may list thousands)

if TYPE_CHECKING:
    from ..context import CanaryContext


def check_identity(ctx: CanaryContext) -> CheckOutcome:
    probe = ctx.probe_client()
    health: dict[str, int | str] = {}
    healthy = None
    for url in probe.config.health_urls():
        try:
            status: int | str = probe.request("GET", url, what="health").status_code
        except EndpointError as exc:
            status = f"{type(exc).__name__}: {cut(str(exc), 300)}"
        health[url] = status
        if status == 200:
            healthy = url
            break
    served = ctx.served_model()
    name = repr(cut(served.name, 100))
    details: dict[str, Any] = {
        "health": health,
        "served_model": cut(served.name),
        "listed_by": served.source,
        "listed": [cut(m, 100) for m in served.listed[:LISTED_IN_DETAILS]],
        "listed_count": len(served.listed),
    }
    tried = ", ".join(f"{u} -> {s}" for u, s in health.items())
    health_note = f"health 200 at {healthy}"
    if healthy is None:
        engine = _healthless_engine(ctx, health, served.name)
        if engine is None:
            return CheckOutcome("identity", False, f"identity: health does not answer 200 ({tried})", details)
        details["engine"] = engine
        health_note = (
            f"no health route ({tried}): {engine} serves none, so the model list and an embedding below are "
            "the liveness proof (probe a load balancer with GET /v1/models)"
        )
    if served.name not in served.listed:
        return CheckOutcome(
            "identity",
            False,
            f"identity: served model {name} is not listed by {served.source} "
            f"(it lists {quote_names(served.listed)}); pass the served name "
            "with --served-model, or the server loaded another model",
            details,
        )
    vec = ctx.client().embed(["identity probe"])
    details["dimension"] = int(vec.shape[1])
    pinned = ctx.prepared.model.name
    details["pinned_model"] = pinned
    named = any(a == pinned or a.rstrip("/").endswith("/" + pinned) for a in served.aliases)
    note = (
        ""
        if named
        else f"; note: served as {name}, not as the pinned model {pinned!r}: a name proves no revision, "
        "vector agreement below does"
    )
    return CheckOutcome(
        "identity",
        True,
        f"identity: {name} is listed by {served.source} and named in responses; "
        f"{health_note}; {vec.shape[1]} dimensions{note}",
        details,
    )


def _healthless_engine(ctx: CanaryContext, health: dict[str, int | str], served: str) -> str | None:
    """The engine, when every health URL answered 404 and the server is one that has no health route
    (diagnose/engines.py: NO_HEALTH_ROUTE); None otherwise (a missing route then fails identity)."""
    if not health or any(status != 404 for status in health.values()):
        return None
    facts = ctx.shared("server_facts", lambda: server_facts(ctx.probe_client(), served))
    return facts.engine if facts.engine in NO_HEALTH_ROUTE else None


def check_auth(ctx: CanaryContext) -> CheckOutcome:
    import secrets

    from ....encode.endpoint import Secret

    served = ctx.served_model()
    details: dict[str, Any] = {}
    failures, notes = [], []
    for case, key in (("no key", None), ("a wrong key", Secret("evalsuite-wrong-" + secrets.token_hex(8)))):
        with ctx.make_client(model=served.name, models=served.aliases, api_key=key, max_retries=0) as probe:
            resp = probe.request(
                "POST",
                probe.config.embeddings_url,
                json=probe.payload(["auth probe"]),
                what=f"the auth probe with {case}",
            )
        details[case] = resp.status_code
        if resp.status_code in (401, 403):
            notes.append(f"{case} -> HTTP {resp.status_code}")
        else:
            failures.append(
                f"a request with {case} got HTTP {resp.status_code}, expected 401: the server does "
                "not enforce the API key"
                if resp.status_code == 200
                else f"a request with {case} got HTTP {resp.status_code}, expected 401"
            )
    ctx.client().embed(["auth probe"])  # the configured key works
    if failures:
        return CheckOutcome("auth", False, "auth: " + "; ".join(failures), details)
    return CheckOutcome("auth", True, "auth: " + ", ".join(notes) + "; the configured key is accepted", details)


IDENTITY = Check(
    name="identity",
    label="identity",
    run=check_identity,
    explanation="health answers 200 (or, on an engine that has no health route, 404 while the model list and an "
    "embedding answer), the server lists the served model (/v1/models or TEI's /info) and names it "
    "in every response, and the vectors have the model's dimension",
    example="identity: served model 'prod-embed' is not listed by /v1/models (it lists 'other-model'); pass the "
    "served name with --served-model, or the server loaded another model",
    stage="identity",
)

AUTH = Check(
    name="auth",
    label="auth",
    run=check_auth,
    requires="api_key_env",
    explanation="a request with no key and one with a wrong key are refused (401/403); the configured key works",
    example="auth: a request with no key got HTTP 200, expected 401: the server does not enforce the API key",
    stage="identity",
)
