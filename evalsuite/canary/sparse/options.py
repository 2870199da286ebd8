"""The sparse canary's own options (`evalsuite canary --endpoint URL --retrieval sparse`), imported at
`pytest --help`: nothing heavy. The endpoint and retrieval thresholds are the embedding canary's flags
(:mod:`evalsuite.canary.embedding.options`), read by :class:`~.settings.SparseCanarySettings` too."""

from __future__ import annotations

from typing import Any

from ...run.options import Option, float_in, int_at_least
from .settings import SPARSE_APIS, SparseCanarySettings


def _option(flag: str, help: str, kwargs: dict[str, Any]) -> Option:
    """An option whose help shows the default of the SparseCanarySettings field behind it."""
    opt = Option(flag, help, kwargs)
    return opt.with_default(SparseCanarySettings.option_default(opt.dest))


SPARSE_CANARY_OPTIONS: tuple[Option, ...] = (
    _option(
        "--sparse-api",
        "sparse canary (--retrieval sparse): the served shape: vllm (POST /pooling, task token_classify: one weight "
        "per token) or tei (POST /embed_sparse: {index, value} per active token)",
        {"choices": SPARSE_APIS},
    ),
    _option(
        "--sparse-min-overlap",
        "sparse canary: min per-text share of active token ids both sides hold (the worst text decides)",
        {"type": float_in(0.0, 1.0), "metavar": "X"},
    ),
    _option(
        "--sparse-weight-tol",
        "sparse canary: max |served - reference| weight on a shared token id (the worst text decides)",
        {"type": float_in(0.0, None), "metavar": "X"},
    ),
    _option(
        "--sparse-canary-sample",
        "sparse canary: dataset queries and documents checked text by text beside the probe texts",
        {"type": int_at_least(0), "metavar": "N"},
    ),
)
