"""The reranker canary's options, declared once for `evalsuite canary`, `evalsuite rerank-canary` and the
pytest plugin (imported at `pytest --help`: nothing heavy).

Parsed defaults are ``None``; :class:`~.rerank_settings.RerankCanarySettings` holds the real ones and the
help texts show them. Each parsed name is its flag's (``reranker_endpoint``), never the embedding canary's
(``endpoint``): `evalsuite canary` holds both canaries' options. ``--api-key-env`` is the embedding
canary's option (:mod:`.options`), naming the key of both endpoints.
"""

from __future__ import annotations

from typing import Any

from ...run.options import Option, float_in, int_at_least
from ..embedding.options import CANARY_OPTIONS
from .settings import API_NAMES, RerankCanarySettings


def _option(flag: str, help: str, kwargs: dict[str, Any] | None = None) -> Option:
    """An option whose help shows the default of the RerankCanarySettings field behind it."""
    opt = Option(flag, help, dict(kwargs or {}))
    return opt.with_default(RerankCanarySettings.option_default(opt.dest))


RERANK_CANARY_OPTIONS: tuple[Option, ...] = (
    _option(
        "--reranker-endpoint",
        "served reranker base URL, e.g. http://host:8000/v1 (the API path is added)",
        {"metavar": "URL"},
    ),
    _option(
        "--reranker-api",
        "request/answer shape: rerank (Infinity, vLLM, SGLang); tei (text-embeddings-inference); score (vLLM)",
        {"choices": API_NAMES},
    ),
    _option("--reranker-served-model", "the served model name sent in requests", {"metavar": "NAME"}),
    _option(
        "--reranker-canary-depth",
        "first-stage documents per query sent to both sides",
        {"type": int_at_least(1), "metavar": "N"},
    ),
    _option("--reranker-canary-queries", "queries checked", {"type": int_at_least(1), "metavar": "N"}),
    _option(
        "--reranker-score-tol",
        "max |served - reference| per pair, after the activation",
        {"type": float_in(0.0, None), "metavar": "X"},
    ),
    _option("--reranker-tau-min", "min per-query Kendall tau", {"type": float_in(-1.0, 1.0), "metavar": "X"}),
    _option(
        "--reranker-metric-tol",
        "max |reranked metric served - reference|",
        {"type": float_in(0.0, None), "metavar": "X"},
    ),
    _option(
        "--reranker-raw-scores",
        "ask the server for raw logits and compare them with the reference's (activation none)",
        {"action": "store_const", "const": True},
    ),
)
# with --api-key-env: every option the reranker canary reads (for `rerank-canary`, which has no embedding canary)
API_KEY_OPTION = next(o for o in CANARY_OPTIONS if o.flag == "--api-key-env")
READ_OPTIONS: tuple[Option, ...] = (*RERANK_CANARY_OPTIONS, API_KEY_OPTION)
