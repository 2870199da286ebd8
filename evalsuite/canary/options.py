"""Canary options, shared by `evalsuite canary` and the pytest plugin (imported at `pytest --help`).

Parsed defaults are ``None`` here; :class:`evalsuite.canary.settings.CanarySettings` holds the real
ones, and the help texts show them (``CanarySettings.option_default``).
Every parser rejects a bad value with a message saying what is allowed. Nothing heavy is imported.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable
from typing import Any

from ..options import Option, int_at_least, spec_type
from .settings import CanarySettings

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _url(text: str) -> str:
    from ..encode.endpoint import base_url

    return base_url(text)


def _env_name(text: str) -> str:
    # Never echo the value: a user who passes the key itself here must not see it printed.
    if not _ENV_NAME.match(text):
        raise argparse.ArgumentTypeError(
            "not an environment variable name (letters, digits and '_'); pass the "
            "NAME of the variable that holds the key, never the key itself"
        )
    return text


def _float_in(low: float, high: float | None, *, low_open: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value != value or (value <= low if low_open else value < low) or (high is not None and value > high):
            bound = f"{'>' if low_open else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")
            raise argparse.ArgumentTypeError(f"{text} is out of range; it must be {bound}")
        return value

    parse.__name__ = "number"
    return parse


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


ENCODING_FORMATS = ("float", "base64")


def _setting(flag: str, help: str, kwargs: dict[str, Any]) -> Option:
    """A canary option whose help shows the default of the setting behind it."""
    opt = Option(flag, help, kwargs)
    return opt.with_default(CanarySettings.option_default(opt.dest))


CANARY_OPTIONS: tuple[Option, ...] = (
    Option(
        "--endpoint",
        "canary: OpenAI-compatible base URL of the served model, e.g. http://127.0.0.1:8000/v1",
        {"type": spec_type(_url, "url"), "metavar": "URL"},
    ),
    Option(
        "--served-model",
        "canary: model name the server serves (default: the only one /v1/models lists)",
        {"metavar": "NAME"},
    ),
    Option(
        "--api-key-env",
        "canary: NAME of the environment variable holding the API key, sent to --endpoint and "
        "--reranker-endpoint alike (the key is never printed or written)",
        {"type": _env_name, "metavar": "VAR"},
    ),
    _setting(
        "--canary-min-cosine",
        "canary: min per-text cosine between served and reference vectors",
        {"type": _float_in(0.0, 1.0, low_open=True), "metavar": "X"},
    ),
    _setting(
        "--canary-max-ndcg-delta",
        "canary: max |delta ndcg@10| between endpoint and reference retrieval",
        {"type": _float_in(0.0, 1.0), "metavar": "X"},
    ),
    _setting(
        "--canary-min-overlap",
        "canary: min mean per-query top-10 overlap between endpoint and reference rankings",
        {"type": _float_in(0.0, 1.0), "metavar": "X"},
    ),
    _setting(
        "--canary-detect",
        "canary: share of requests a partial fault (one replica of a fleet) must reach to be caught with "
        "probability 0.99; the canary sends as many probe requests as that needs",
        {"type": _float_in(0.0, 1.0, low_open=True), "metavar": "SHARE"},
    ),
    Option(
        "--canary-dimensions",
        "canary: also check server-side Matryoshka output via 'dimensions', e.g. 256,128 (off unless given)",
        {"type": _dimensions, "metavar": "N,N"},
    ),
    _setting(
        "--endpoint-timeout",
        "canary: seconds to wait for each HTTP answer",
        {"type": _float_in(0.0, None, low_open=True), "metavar": "SECONDS"},
    ),
    _setting(
        "--endpoint-concurrency", "canary: max requests in flight per URL", {"type": int_at_least(1), "metavar": "N"}
    ),
    _setting("--endpoint-batch-size", "canary: max texts per request", {"type": int_at_least(1), "metavar": "N"}),
    _setting(
        "--encoding-format", "canary: response encoding", {"choices": ENCODING_FORMATS, "metavar": "float|base64"}
    ),
    Option(
        "--suspect-model",
        "canary: a model directory (another revision) the diagnosis of a failed check also tries; repeatable",
        {"metavar": "DIR", "action": "append", "dest_name": "suspect_models"},
    ),
    _setting(
        "--canary-deadline",
        "canary: seconds the whole canary may take; checks still running then fail, "
        "naming it (each request also ends within --endpoint-timeout)",
        {"type": _float_in(0.0, None, low_open=True), "metavar": "SECONDS"},
    ),
)

# `evalsuite canary` and the pytest plugin: --endpoint repeatable, one URL per member of a fleet, each member checked
# on its own (evalsuite.canary.fleet); `load` and `verify` share the one-URL --endpoint of CANARY_OPTIONS
FLEET_ENDPOINT = Option(
    "--endpoint",
    "canary: OpenAI-compatible base URL of the served model, e.g. http://127.0.0.1:8000/v1; repeat it for each "
    "member of a fleet: every check runs against each member on its own, and a failing member is named",
    {"type": spec_type(_url, "url"), "metavar": "URL", "action": "append"},
)
CANARY_FLEET_OPTIONS: tuple[Option, ...] = tuple(
    FLEET_ENDPOINT if o.flag == "--endpoint" else o for o in CANARY_OPTIONS
)

# `evalsuite run --endpoint URL [--endpoint URL ...]`: the endpoint client options above, declared once, for a
# served deployment as the encoder (evalsuite.encode.fleet)
CLIENT_FLAGS = (
    "--served-model",
    "--api-key-env",
    "--endpoint-timeout",
    "--endpoint-concurrency",
    "--endpoint-batch-size",
    "--encoding-format",
)


def _for_run(opt: Option) -> Option:
    return dataclasses.replace(opt, help="with --endpoint: " + opt.help.removeprefix("canary: "))


RUN_ENDPOINT_OPTIONS: tuple[Option, ...] = (
    Option(
        "--endpoint",
        "evaluate the model as served: OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1; "
        "repeat for a fleet (batches are spread over the URLs, which must all serve one model)",
        {"type": spec_type(_url, "url"), "metavar": "URL", "action": "append", "dest_name": "endpoints"},
    ),
    *(_for_run(o) for o in CANARY_OPTIONS if o.flag in CLIENT_FLAGS),
    Option(
        "--endpoint-dimensions",
        "with --endpoint: ask the server for --dim columns ('dimensions') instead of "
        "cutting and re-normalizing the full vectors here",
        {"action": "store_const", "const": True},
    ),
)
