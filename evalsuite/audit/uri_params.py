"""A store URI's query parameters split in two: evalsuite's own keys (declared once per store kind: the table, its
columns, the metric, the search knobs) and the store client's own options, which pass through to the client as
its users write them (libpq's ``sslmode``, ``host``, ``service`` ...; LanceDB's ``connect`` options).

A key that is neither is refused with both lists in the message; a key the client treats as a secret (a password)
is refused without echoing its value; a key given twice or empty is refused. Values are never echoed for secret
keys; the others are the user's own text.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote_plus

from ..base.errors import IndexSourceError


@dataclass(frozen=True)
class UriParams:
    """``own``: evalsuite's keys; ``client``: what passes through to the store's client, in the URI's order."""

    own: dict[str, str] = field(default_factory=dict)
    client: dict[str, str] = field(default_factory=dict)


def redacted(uri: str, secret: Collection[str]) -> str:
    """``uri`` as errors may show it: the value of every query parameter named in ``secret`` (however its key is
    percent-encoded) replaced by ``***``; the rest as written."""
    head, sep, query = uri.partition("?")
    if not sep:
        return uri
    segments = []
    for seg in query.split("&"):
        key, eq, _ = seg.partition("=")
        segments.append(f"{key}{eq}***" if eq and unquote_plus(key) in secret else seg)
    return f"{head}?{'&'.join(segments)}"


def split_params(
    shown: str,
    pairs: Sequence[tuple[str, str]],
    *,
    own: Sequence[str],
    client: Collection[str],
    client_name: str,
    secret: Collection[str] = (),
    secret_hint: str = "",
) -> UriParams:
    """Split ``pairs`` (``urllib.parse.parse_qsl(..., keep_blank_values=True)``) of the URI shown as ``shown``."""
    out = UriParams()
    for key, value in pairs:
        if key in secret:
            raise IndexSourceError(
                f"--index {shown}: the URI carries {key}=, a secret; remove it from the URI{secret_hint}"
            )
        if key in own:
            target = out.own
        elif key in client:
            target = out.client
        else:
            raise IndexSourceError(
                f"--index {shown}: unknown parameter {key!r}; evalsuite's parameters are {', '.join(own)}, and "
                f"{client_name}'s own are {', '.join(sorted(k for k in client if k not in secret))}"
            )
        if key in target:
            raise IndexSourceError(f"--index {shown}: parameter {key!r} given twice")
        if not value:
            raise IndexSourceError(f"--index {shown}: parameter {key!r} is empty")
        target[key] = value
    return out
