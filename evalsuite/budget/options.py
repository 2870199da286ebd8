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
