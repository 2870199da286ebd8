"""Canary options, shared by `evalsuite canary` and the pytest plugin (imported at `pytest --help`).

Parsed defaults are ``None`` here; :class:`evalsuite.canary.embedding.settings.CanarySettings` holds the real
ones, and the help texts show them (``CanarySettings.option_default``).
Every parser rejects a bad value with a message saying what is allowed. Nothing heavy is imported.
"""

from __future__ import annotations

import argparse
from typing import Any

from ...run.options import CLIENT, Option, float_in, int_at_least, prefixed, spec_type, url
from .settings import CanarySettings


def _dimensions(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("give one or more output dimensions, e.g. 256,128")
    try:
        dims = tuple(dict.fromkeys(int_at_least(1)(p) for p in parts))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r}: {exc}; give comma-separated positive integers, e.g. 256,128"
        ) from None
    return dims


def _setting(flag: str, help: str, kwargs: dict[str, Any]) -> Option:
    """A canary option whose help shows the default of the setting behind it."""
    opt = Option(flag, help, kwargs)
    return opt.with_default(CanarySettings.option_default(opt.dest))


CANARY_OPTIONS: tuple[Option, ...] = (
    Option(
        "--endpoint",
        "canary: OpenAI-compatible base URL of the served model, e.g. http://127.0.0.1:8000/v1",
        {"type": spec_type(url, "url"), "metavar": "URL"},
    ),
    prefixed(CLIENT["--served-model"], "canary: "),
    prefixed(CLIENT["--api-key-env"], "canary: "),
    _setting(
        "--canary-min-cosine",
        "canary: min per-text cosine between served and reference vectors",
        {"type": float_in(0.0, 1.0, low_open=True), "metavar": "X"},
    ),
    _setting(
        "--canary-max-ndcg-delta",
        "canary: max |delta ndcg@10| between endpoint and reference retrieval",
        {"type": float_in(0.0, 1.0), "metavar": "X"},
    ),
    _setting(
        "--canary-min-overlap",
        "canary: min mean per-query top-10 overlap between endpoint and reference rankings",
        {"type": float_in(0.0, 1.0), "metavar": "X"},
    ),
    _setting(
        "--canary-detect",
        "canary: share of requests a partial fault (one replica of a fleet) must reach to be caught with "
        "probability 0.99; the canary sends as many probe requests as that needs",
        {"type": float_in(0.0, 1.0, low_open=True), "metavar": "SHARE"},
    ),
    Option(
        "--canary-dimensions",
        "canary: also check server-side Matryoshka output via 'dimensions', e.g. 256,128 (off unless given)",
        {"type": _dimensions, "metavar": "N,N"},
    ),
    prefixed(CLIENT["--endpoint-timeout"], "canary: "),
    prefixed(CLIENT["--endpoint-concurrency"], "canary: "),
    prefixed(CLIENT["--endpoint-batch-size"], "canary: "),
    prefixed(CLIENT["--encoding-format"], "canary: "),
    Option(
        "--suspect-model",
        "canary: a model directory (another revision) the diagnosis of a failed check also tries; repeatable",
        {"metavar": "DIR", "action": "append", "dest_name": "suspect_models"},
    ),
    _setting(
        "--canary-deadline",
        "canary: seconds the whole canary may take; checks still running then fail, "
        "naming it (each request also ends within --endpoint-timeout)",
        {"type": float_in(0.0, None, low_open=True), "metavar": "SECONDS"},
    ),
)

# `evalsuite canary` and the pytest plugin: --endpoint repeatable, one URL per member of a fleet, each member checked
# on its own (evalsuite.canary.fleet); `load` and `verify` share the one-URL --endpoint of CANARY_OPTIONS
FLEET_ENDPOINT = Option(
    "--endpoint",
    "canary: OpenAI-compatible base URL of the served model, e.g. http://127.0.0.1:8000/v1; repeat it for each "
    "member of a fleet: every check runs against each member on its own, and a failing member is named",
    {"type": spec_type(url, "url"), "metavar": "URL", "action": "append"},
)
CANARY_FLEET_OPTIONS: tuple[Option, ...] = tuple(
    FLEET_ENDPOINT if o.flag == "--endpoint" else o for o in CANARY_OPTIONS
)
