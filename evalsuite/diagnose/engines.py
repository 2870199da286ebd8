"""What a server says about itself beyond the model name: which engine it is and its max length.

Read from one ``GET /v1/models`` (vLLM lists ``owned_by: "vllm"`` and ``max_model_len``; Infinity
``owned_by: "infinity"``; SGLang ``owned_by: "sglang"``; llama.cpp's ``llama-server`` ``owned_by:
"llamacpp"``; llama-cpp-python's server ``owned_by: "me"`` with a ``permissions`` list and nothing else)
or TEI's ``/info`` (``max_input_length``). See docs/engines.md. Unknown fields and engines are not
errors: the facts are None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.errors import EndpointError

if TYPE_CHECKING:
    from ..encode.endpoint import EndpointEncoder

ENGINES = ("vllm", "sglang", "infinity", "tei", "llamacpp", "llama-cpp-python")
# Engines that serve no health route at all (``/health`` answers 404): the canary's identity check takes
# the model list and an embedding as the liveness proof instead, and says so.
NO_HEALTH_ROUTE = frozenset({"llama-cpp-python"})
# llama-cpp-python's /v1/models entry, exactly (llama_cpp/server/app.py, 0.3.x): no engine name in it.
_LLAMA_CPP_PYTHON_KEYS = frozenset({"id", "object", "owned_by", "permissions"})


@dataclass(frozen=True)
class ServerFacts:
    engine: str | None
    max_length: int | None  # the server's own token limit, when it reports one

    def to_dict(self) -> dict[str, object]:
        return {"engine": self.engine, "max_length": self.max_length}


def facts_from_models(payload: object, served: str | None) -> ServerFacts:
    """The facts in a ``/v1/models`` answer, for the entry of ``served`` (or the only one)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    entry = next((e for e in entries if e.get("id") == served), entries[0] if len(entries) == 1 else None)
    if entry is None:
        return ServerFacts(None, None)
    owner = str(entry.get("owned_by", "")).lower()
    engine = next((e for e in ENGINES if e in owner), None)
    if engine is None and owner == "me" and set(entry) == _LLAMA_CPP_PYTHON_KEYS:
        engine = "llama-cpp-python"
    length = entry.get("max_model_len")
    return ServerFacts(engine, length if isinstance(length, int) and length > 1 else None)


def facts_from_info(payload: object) -> ServerFacts:
    """TEI's ``/info``."""
    length = payload.get("max_input_length") if isinstance(payload, dict) else None
    return ServerFacts("tei", length if isinstance(length, int) and length > 1 else None)


def server_facts(probe: EndpointEncoder, served: str | None) -> ServerFacts:
    """Ask the server (``probe`` checks no model name); a server that answers neither route gives no facts."""
    try:
        return facts_from_models(probe.get_json(probe.config.models_url), served)
    except EndpointError:
        try:
            return facts_from_info(probe.get_json(probe.config.root_url("/info")))
        except EndpointError:
            return ServerFacts(None, None)
