"""Reranker options, declared once (``evalsuite rerank``, ``run``, ``rerank-sweep``, ``canary``, ``rerank-canary``).
Nothing heavy imported.

Each option's parsed name is its flag's (``reranker_max_length``), never a first-stage option's: the commands
register these beside ``--max-length``, ``--dtype``, ``--truncation`` and ``--batch-size`` of the first stage.
:func:`rerank_settings` reads them back as ``RerankSpec`` fields.
"""

from __future__ import annotations

import argparse
import dataclasses

from ..contract import DTYPES
from ..run.options import Option, collect, int_at_least
from .contract import ACTIVATIONS, PAIR_TRUNCATIONS
from .run import RerankSpec

_DEFAULTS = {f.name: f.default for f in dataclasses.fields(RerankSpec) if f.default is not dataclasses.MISSING}


def depths(text: str) -> tuple[int, ...]:
    """``100`` or ``10,50,100``: one first stage serves every depth."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("give one or more rerank depths, e.g. 100 or 10,50,100")
    return tuple(sorted(dict.fromkeys(int_at_least(1)(p) for p in parts)))


_FIELDS: dict[str, str] = {}  # option dest -> RerankSpec field


def _opt(flag: str, help: str, field: str, kwargs: dict[str, object] | None = None) -> Option:
    opt = Option(flag, help, dict(kwargs or {}))
    _FIELDS[opt.dest] = field
    default = _DEFAULTS.get(field)
    return opt.with_default(default) if default is not None else opt


RERANK_OPTIONS: tuple[Option, ...] = (
    _opt("--reranker", "cross-encoder directory (or cached hub id) that reranks the first stage's top N", "reranker"),
    _opt(
        "--reranker-rev",
        "pinned reranker revision (the digest `evalsuite model-rev DIR` prints, or a 40-hex commit)",
        "reranker_rev",
    ),
    _opt("--reranker-tokenizer-rev", "pinned reranker tokenizer revision", "reranker_tokenizer_rev"),
    _opt(
        "--reranker-activation",
        "activation applied to the logit (default: what the model declares; sigmoid for "
        "a one-label model that declares nothing)",
        "activation",
        {"choices": ACTIVATIONS},
    ),
    _opt(
        "--reranker-template",
        "'pair' (the tokenizer's [CLS] q [SEP] d [SEP]) or one text with {query} and {document}",
        "template",
    ),
    _opt(
        "--reranker-max-length",
        "max tokens per pair (default: the reranker's max length)",
        "max_length",
        {"type": int_at_least(4)},
    ),
    _opt(
        "--reranker-truncation",
        "over-long pairs: longest_first, only_second (cut the document) or reject",
        "truncation",
        {"choices": PAIR_TRUNCATIONS},
    ),
    _opt("--reranker-dtype", "reranker forward-pass dtype", "dtype", {"choices": DTYPES}),
    _opt("--reranker-batch-size", "max pairs per reranker forward batch", "batch_size", {"type": int_at_least(1)}),
)


def rerank_settings(values: object, dest_prefix: str = "") -> dict[str, object]:
    """The reranker settings a user gave, as {RerankSpec field: value} (for ``RerankSpec.from_mapping``)."""
    return {_FIELDS[k]: v for k, v in collect(values, RERANK_OPTIONS, dest_prefix).items()}


DEPTH_OPTION = Option(
    "--rerank-depth",
    "documents per query the reranker reorders; several (10,50,100) share one first stage",
    {"type": depths, "dest_name": "depths"},
).with_default(_DEFAULTS["depth"])
