"""The budget's options, declared once for `evalsuite budget` and `pytest --budget`: the run's options (the
contract and what production adds: --dtype, --dim, --index KIND:PARAMS, --endpoint and its client), the built
index as the audit opens it (--index-uri, --ids, --password-env), the attribution rule and the stage gates."""

from __future__ import annotations

import dataclasses

from ..run.options import RUN_ENDPOINT_OPTIONS, RUN_OPTIONS, Option, spec_type
from .plan import ATTRIBUTIONS


def _gate(text: str) -> str:
    from .gates import parse_budget_gate

    parse_budget_gate(text)  # raises SpecError: an unknown stage, kind or metric
    return text


INDEX_URI_OPTIONS: tuple[Option, ...] = (
    Option(
        "--index-uri",
        "the index as built, read as `evalsuite audit` reads it: faiss:PATH, postgresql://USER@HOST:PORT/DB?table=T"
        "&id=COL&vector=COL, lancedb:DIR?table=T (the 'index' stage)",
        {"metavar": "URI"},
    ),
    Option(
        "--ids", "with --index-uri faiss:PATH: the chunk ids, one per line (line i = FAISS id i)", {"metavar": "PATH"}
    ),
    Option(
        "--password-env",
        "with --index-uri postgresql://: the variable holding the password (default: PGPASSWORD)",
        {"metavar": "VAR"},
    ),
)


def _reranker_options() -> tuple[Option, ...]:
    from ..rerank.options import DEPTH_OPTION, RERANK_OPTIONS

    return (*RERANK_OPTIONS, DEPTH_OPTION)


BUDGET_OPTIONS: tuple[Option, ...] = (
    *INDEX_URI_OPTIONS,
    *_reranker_options(),
    Option(
        "--attribution",
        "how stages are charged: sequential (each against the stage before, in pipeline order) or shapley (every "
        "order of the declared stages averaged)",
        {"choices": ATTRIBUTIONS},
        default="sequential",
    ),
)


def _alternative(text: str) -> str:
    from .choose import parse_alternative

    parse_alternative(text)
    return text


def _choose(text: str) -> str:
    from ..sweep.choose import parse_choose

    parse_choose(text)
    return text


CHOOSE_OPTIONS: tuple[Option, ...] = (
    Option(
        "--choose",
        "name the cheapest of the declared production and each --alternative that is non-inferior to the reference: "
        "METRIC:non_inferior=MARGIN (the sweep's --choose rule), e.g. ndcg@10:non_inferior=0.02",
        {"metavar": "EXPR", "type": spec_type(_choose, "choose")},
    ),
    Option(
        "--alternative",
        "with --choose: the deployment with one stage's setting changed, AXIS=VALUE with AXIS dim, index or dtype "
        "(index=hnsw:ef=16, dim=256, index=ivfpq:nlist=8,nprobe=4); repeatable",
        {
            "action": "append",
            "metavar": "AXIS=VALUE",
            "type": spec_type(_alternative, "alternative"),
            "dest_name": "alternatives",
        },
    ),
    Option(
        "--cost",
        "what --choose minimises: bytes (per vector), latency (p50 search) or dim",
        {"choices": ("bytes", "latency", "dim")},
        default="bytes",
    ),
)
GATE_OPTION = Option(
    "--gate",
    "a stage's own budget in the release gates' syntax with [stage=NAME]: ndcg@10[stage=ann]:max_drop=0.01, "
    "recall@10[stage=compression]:non_inferior=0.02; [stage=production] judges production against the reference; "
    "repeatable (exit 1 when one fails)",
    {"action": "append", "metavar": "EXPR", "type": spec_type(_gate, "gate"), "dest_name": "budget_gates"},
)
# the run's options with the production settings' help saying what they declare
_DECLARES = {
    "--dtype": "production's forward-pass dtype (the 'precision' stage; the reference is float32)",
    "--dim": "production's Matryoshka cut, re-normalized (the 'dimension' stage; the reference keeps every dim)",
    "--index": "production's index: its compression (sq8, the PQ of ivfpq, binary[+rescore=R]: the 'compression' "
    "stage) and its approximate search (hnsw, ivf, the lists of ivfpq: the 'ann' stage); the reference is flat",
}
BUDGET_RUN_OPTIONS: tuple[Option, ...] = tuple(
    dataclasses.replace(o, help=_DECLARES[o.flag]) if o.flag in _DECLARES else o
    for o in (*RUN_OPTIONS, *RUN_ENDPOINT_OPTIONS)
)
