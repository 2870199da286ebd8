"""Sweep options, shared by `evalsuite sweep` and the pytest plugin (declared once, parsed at parse time).

`evalsuite sweep --vary pooling=cls,mean` writes a sweep report; `pytest --vary pooling=cls,mean`
makes each cell an item gated against the base.
"""

from __future__ import annotations

from ..run.options import Option, spec_type
from .axes import parse_axis
from .registry import FIRST_STAGE_AXES, RERANKER_AXES


def _vary_item(text: str) -> str:
    parse_axis(text)  # raises SpecError for an unknown axis or a bad value
    return text


VARY_OPTION = Option(
    "--vary",
    f"AXIS=V1,V2,... one sweep axis (repeatable); axes: {', '.join(FIRST_STAGE_AXES)} "
    f"(and, under `evalsuite rerank-sweep`, {', '.join(RERANKER_AXES)}); e.g. "
    "pooling=cls,mean,last, dim=384,256,128, index=flat,hnsw,ivfpq,sq8,binary+rescore=100 (crossed with dim), "
    'prefixes=base,none,swapped, query_prefix=["q: ", ""]; '
    "under pytest each cell is an item gated against the base",
    {"action": "append", "type": spec_type(_vary_item, "axis")},
)
SWEEP_OPTIONS: tuple[Option, ...] = (
    VARY_OPTION,
    Option(
        "--grid",
        "cross every axis (full product) instead of one variable at a time",
        {"action": "store_const", "const": True},
    ),
)


def _choose(text: str) -> str:
    from .choose import parse_choose

    parse_choose(text)  # raises SpecError: not METRIC:non_inferior=MARGIN
    return text


# `evalsuite sweep` only: which cell to ship (sweep/choose.py)
CHOOSE_OPTIONS: tuple[Option, ...] = (
    Option(
        "--choose",
        "name the cheapest cell non-inferior to the base: METRIC:non_inferior=MARGIN (the release gates' rule, its "
        "confidence Bonferroni-corrected over the cells considered), e.g. ndcg@10:non_inferior=0.01",
        {"metavar": "EXPR", "type": spec_type(_choose, "choose")},
    ),
    Option(
        "--cost",
        "what --choose minimises: bytes (per vector, of the cell's index), latency (p50 search of an index cell) or "
        "dim",
        {"choices": ("bytes", "latency", "dim")},
        default="bytes",
    ),
)
