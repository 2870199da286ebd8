"""The diagnosis of a failed canary check: the served vectors of the canary texts against every
alternative (:mod:`.local`), scored (:mod:`.score`), with the engine's remedy (:mod:`.engines`).

One diagnosis per session context (the vectors checks disagree on are the same), plus one per
Matryoshka size that failed. The CLI and the pytest items call :func:`diagnosis_for`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..base.errors import EndpointError
from ..diagnose.engines import ServerFacts, server_facts
from ..diagnose.hypotheses import Alternative
from ..diagnose.local import AlternativeVectors, Hypotheses, Probes, ReferenceSource
from ..diagnose.score import Diagnosis, diagnose, name_precision
from ..encode.http import EndpointHTTPError
from ..encode.response import DimensionMismatch
from .embedding.checks.ladder import SHARED_KEY as LADDER_KEY
from .embedding.checks.ladder import Cap
from .embedding.registry import declared as find_declared

if TYPE_CHECKING:
    import numpy as np

    from ..checks import CheckOutcome
    from ..encode.endpoint import EndpointEncoder
    from .embedding.context import CanaryContext


def diagnosis_for(ctx: CanaryContext, verdict: CheckOutcome) -> Diagnosis | None:
    """The diagnosis for a failed check whose declaration says the diagnosis reads it (``diagnosed``); None
    otherwise, or when the server cannot be asked."""
    declared = find_declared(verdict.check)
    if verdict.passed is not False or declared is None or not declared.diagnosed:
        return None
    dims = _failed_dimensions(verdict) if verdict.check == "matryoshka" else None
    try:
        return ctx.shared(f"diagnosis:{dims}", lambda: _diagnose(ctx, dims))
    except EndpointError:  # the server broke while asked again: the checks already say how
        return None


def _failed_dimensions(verdict: CheckOutcome) -> int | None:
    """The first --canary-dimensions size whose vectors failed (from the matryoshka verdict's details)."""
    for key, entry in verdict.details.items():
        if key.isdigit() and isinstance(entry, dict) and f"dimensions={key}:" in verdict.message:
            return int(key)
    return None


def _diagnose(ctx: CanaryContext, dims: int | None) -> Diagnosis:
    c, hidden, info = ctx.contract, ctx.hidden_size, ctx.prepared.model
    probes, served = _served(ctx, dims)
    facts = _facts(ctx)
    source = _reference_source(ctx)
    vectors = AlternativeVectors(c, hidden, info.prompts, source, probes, info.default_prompt_name)
    hyps = Hypotheses.for_contract(
        c,
        model_max=info.default_max_length,
        max_positions=info.max_positions,
        server_max=facts.max_length,
        suspects=ctx.settings.suspect_models,
    )
    cap = ctx.known(LADDER_KEY)  # the length ladder's cap, when it found one: a length no fixed list holds
    if isinstance(cap, Cap) and cap.agrees != c.max_length and 2 <= cap.agrees <= info.max_positions:
        hyps = dataclasses.replace(hyps, lengths=tuple(sorted({*hyps.lengths, cap.agrees})))
    base = Alternative.of_contract(c if dims is None else c.replace(dim=dims), hidden)
    what = f"{len(probes.ids)} canary texts" + (f" with dimensions={dims}" if dims else "")
    if probes.refused:
        what += f" ({len(probes.refused)} refused by the server and left out: {', '.join(probes.refused)})"
    candidates: dict[Alternative, np.ndarray] = {}
    width = int(served.shape[1])
    found: Diagnosis | None = None
    for group in vectors.candidate_groups(base, width, hyps):
        candidates.update(group)
        if not any(v.shape[1] == width for v in candidates.values()):
            continue  # no alternative of the served width yet (a dropped Dense head's comes with its group)
        found = diagnose(
            served, candidates, probes.ids, base=base, hidden=hidden, contract=c, what=what, engine=facts.engine
        )
        if found.explained:
            break
    if found is None:
        raise ValueError(f"no alternative has the served vectors' {width} dimensions")
    # only once every alternative is in: a quantized server's vectors are near several of them
    found = name_precision(found, served, candidates, probes.ids, base=base, hidden=hidden, contract=c)
    return dataclasses.replace(found, not_tested=tuple(vectors.not_tested))


def _facts(ctx: CanaryContext) -> ServerFacts:
    return ctx.shared("server_facts", lambda: server_facts(ctx.probe_client(), ctx.known_served_model()))


def _served(ctx: CanaryContext, dims: int | None) -> tuple[Probes, np.ndarray]:
    """The served vectors (see :func:`_served_by`); when they are not the contract's width (no ``dimensions`` asked),
    asked again by a client that expects the width the server sends, so a dropped Dense head (the transformer's
    hidden size) can be diagnosed too."""
    client = ctx.client()
    try:
        return _served_by(ctx, dims, client)
    except DimensionMismatch:
        width = None if dims is not None else _served_width(ctx, client)
        if width is None or width == ctx.hidden_size:
            raise
    served = ctx.served_model()
    other = ctx.make_client(model=served.name, models=served.aliases, dim=width)
    try:
        return _served_by(ctx, dims, other)
    finally:
        other.close()


def _served_width(ctx: CanaryContext, client: EndpointEncoder) -> int | None:
    """The width of the vector the server sends for the first canary text (None when it sends none)."""
    cs = ctx.canary_set()
    resp = client.request(
        "POST", client.config.embeddings_url, json=client.payload(cs.rendered(ctx.contract)[:1]), what="the width probe"
    )
    body: Any = resp.json()
    try:
        raw = body["data"][0]["embedding"]
    except (KeyError, IndexError, TypeError):
        return None
    if isinstance(raw, str):
        import base64

        return len(base64.b64decode(raw)) // 4
    return len(raw) if isinstance(raw, list) else None


def _served_by(ctx: CanaryContext, dims: int | None, client: EndpointEncoder) -> tuple[Probes, np.ndarray]:
    """The served vectors of the canary texts as they come (norms unchecked), and of the over-long
    document too when the server embeds it (it tests truncation above the contract's max length).

    The texts go in the batches the client sends them in (sorted by length, ``batch_size`` a request), one request
    each, and ``Probes.batches`` says which: a server whose vectors depend on the batch (it pools a pad token) is
    diagnosed against a forward pass over the same batches. A batch the server refuses (a 4xx: a text over its
    limit once a gateway adds an instruction) is sent again one text a request, and the texts it still refuses are
    left out of the diagnosis (``refused``)."""
    import numpy as np

    from ..run import probes as texts

    c, cs = ctx.contract, ctx.canary_set()
    rendered = cs.rendered(c)
    order = sorted(range(len(rendered)), key=lambda i: len(rendered[i]))  # as EndpointEncoder.embed batches them
    size = client.config.batch_size
    rows: list[int] = []
    vectors: list[np.ndarray] = []
    batches: list[tuple[int, ...]] = []
    refused: list[int] = []

    def send(batch: list[int]) -> np.ndarray:
        return client.embed(
            [rendered[i] for i in batch],
            ids=[cs.ids[i] for i in batch],
            dimensions=dims,
            check_norm=False,
            batch_size=len(batch),
            sort_by_length=False,
        )

    first: EndpointHTTPError | None = None
    for start in range(0, len(order), size):
        batch = order[start : start + size]
        try:
            got = [(batch, send(batch))]
        except EndpointHTTPError as exc:
            if not _refusal(exc):
                raise
            first = first or exc
            got = []
            for i in batch:
                try:
                    got.append(([i], send([i])))
                except EndpointHTTPError as one:
                    if not _refusal(one):
                        raise
                    refused.append(i)
        for sent, vecs in got:
            batches.append(tuple(range(len(rows), len(rows) + len(sent))))
            rows.extend(sent)
            vectors.append(vecs)
    if not rows and first is not None:
        raise first
    keep = sorted(range(len(rows)), key=lambda k: rows[k])  # back to the canary set's order
    position = {k: n for n, k in enumerate(keep)}
    served = np.vstack(vectors)[keep]
    probes = Probes(
        tuple(cs.ids[rows[k]] for k in keep),
        tuple(cs.roles[rows[k]] for k in keep),
        tuple(cs.texts[rows[k]] for k in keep),
        batches=tuple(tuple(sorted(position[k] for k in b)) for b in batches),
        refused=tuple(cs.ids[i] for i in sorted(refused)),
    )
    if c.truncation != "truncate":
        return probes, served
    doc_id, text = texts.over_limit_document(c.max_length)
    try:
        extra = client.embed([c.render("document", text)], ids=[doc_id], dimensions=dims, check_norm=False)
    except EndpointError:  # refused (a 4xx is fine): diagnose without it
        return probes, served
    n = len(probes.ids)
    return (
        dataclasses.replace(
            probes,
            ids=(*probes.ids, doc_id),
            roles=(*probes.roles, "document"),
            texts=(*probes.texts, text),
            batches=(*probes.batches, (n,)),
        ),
        np.vstack([served, extra]),
    )


def _refusal(exc: EndpointHTTPError) -> bool:
    """The server refused these inputs (a 4xx other than auth and rate limits): another batch may pass."""
    return 400 <= exc.status < 500 and exc.status not in (401, 403, 429)


def _reference_source(ctx: CanaryContext) -> ReferenceSource:
    from ..diagnose.reference import reference_source
    from ..run.pipeline import make_encoder

    prepared = ctx.prepared
    return reference_source(
        prepared.contract,
        prepared.model,
        prepared.spec.device,
        lambda: ctx.reference().encoder,
        lambda dtype, max_length: make_encoder(prepared, dtype=dtype, max_length=max_length),
        ctx.hidden_size,
        token_counts=ctx.token_counts,
    )


def diagnoses_for(ctx: CanaryContext, verdicts: list[CheckOutcome]) -> tuple[Diagnosis, ...]:
    """The distinct diagnoses of every failed check (the canary texts' one, and one per failed Matryoshka size)."""
    found: list[Diagnosis] = []
    for v in verdicts:
        d = diagnosis_for(ctx, v)
        if d is not None and all(d is not x for x in found):
            found.append(d)
    return tuple(found)
