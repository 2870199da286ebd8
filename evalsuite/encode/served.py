"""What a server says it serves: the model name from ``/v1/models`` (or TEI's ``/info``), checked.

Shared by the canary (one URL) and the fleet encoder (one or several URLs serving one model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.errors import EndpointError, SpecError
from .secret import cut, redact

if TYPE_CHECKING:
    from .endpoint import EndpointEncoder


def is_model_name(name: str) -> bool:
    """A server-given string that may be used as a model name: short, and holding no API key."""
    from .response import MAX_MODEL_NAME

    return 0 < len(name) <= MAX_MODEL_NAME and redact(name) == name


def quote_names(names: tuple[str, ...] | list[str], *, quote: bool = True, limit: int = 5) -> str:
    """Model names a server gave, cut for a message: the first ``limit``, then how many more."""
    if not names:
        return "nothing"
    shown = ", ".join(repr(cut(n, 100)) if quote else cut(n, 100) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


@dataclass(frozen=True)
class ServedModel:
    """What the server says it serves: the name to send, and the names a response may carry."""

    name: str
    listed: tuple[str, ...]
    aliases: frozenset[str]
    source: str  # "/v1/models" or "/info" or "settings"


def discover_served_model(probe: EndpointEncoder, wanted: str | None) -> ServedModel:
    """The model ``probe``'s server serves (``wanted`` when given, else the only one it lists); ``probe``
    checks no model name. TEI has no ``/v1/models``: its ``/info`` is asked instead."""
    from .response import ResponseFormatError, check_info, check_models

    url = probe.config.models_url
    try:
        entries = check_models(probe.get_json(url), f"GET {url}")  # a list of objects with a model-name "id"
        source = "/v1/models"
    except EndpointError as exc:
        if getattr(exc, "status", None) != 404:
            raise
        url = probe.config.root_url("/info")  # TEI has /info, no /v1/models
        info = check_info(probe.get_json(url), f"GET {url}")
        entries = [{"id": info["model_id"]}] if "model_id" in info else []
        source = "/info"
    listed = tuple(str(e["id"]) for e in entries)
    if wanted is None:
        if not listed:
            raise ResponseFormatError(
                f"{probe.config.url}: {source} lists no model; pass --served-model NAME, or "
                "check that the server loaded its model"
            )
        if len(listed) != 1:
            raise SpecError(
                f"the server lists {len(listed)} models ({quote_names(listed, quote=False)}); "
                "pass --served-model NAME to say which one to use"
            )
        wanted = listed[0]
    aliases = {wanted}
    for e in entries:
        root = e.get("root")
        if e["id"] == wanted and isinstance(root, str) and is_model_name(root):
            aliases.add(root)  # vLLM/SGLang list the model path as "root"
    return ServedModel(name=wanted, listed=listed, aliases=frozenset(aliases), source=source)
