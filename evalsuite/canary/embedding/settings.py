"""Canary settings: the real defaults, validation, and reading the API key from the environment.

How to reach the endpoint is one :class:`~evalsuite.encode.endpoint.EndpointConfig` (its fields,
defaults and validation live there); this module adds how strict to be. Each canary field names its
option in its metadata, so the option table, ``option_default`` and ``from_values`` read one place.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from ...base.errors import SpecError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from ...encode.endpoint import EndpointConfig, Secret

# option name (as evalsuite.run.options.collect returns it) -> EndpointConfig field
_ENDPOINT_OPTIONS = {
    "endpoint": "url",
    "served_model": "model",
    "endpoint_timeout": "timeout",
    "endpoint_concurrency": "concurrency",
    "endpoint_batch_size": "batch_size",
    "encoding_format": "encoding_format",
}
# CanarySettings(...) also takes every EndpointConfig field by its own name, except ``api_key``
_ENDPOINT_ALIASES = {"endpoint": "url", "served_model": "model"}
# the endpoint settings a report shows, under the names reports have always used
_REPORTED_ENDPOINT = ("timeout", "concurrency", "batch_size", "encoding_format", "max_retries")


T = TypeVar("T")


def _setting(
    default: T,
    option: str | None = None,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> T:
    """A canary field: its default, the option that sets it, and the bounds of a threshold."""
    return field(default=default, metadata={"option": option, "low": low, "high": high, "low_open": low_open})


def check_bounds(settings: DataclassInstance, what: str) -> None:
    """Every field declared with bounds (``_setting(..., low=, high=)``) holds a number within them;
    SpecError naming ``what`` (``canary``, ``reranker canary``), the field and the bounds otherwise."""
    for f in dataclasses.fields(settings):
        low, high = f.metadata.get("low"), f.metadata.get("high")
        if low is None:
            continue
        value = getattr(settings, f.name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
        too_low = number and (value <= low if f.metadata["low_open"] else value < low)
        if not number or too_low or (high is not None and value > high):
            bounds = f"{'(' if f.metadata['low_open'] else '['}{low:g}, {'inf)' if high is None else f'{high:g}]'}"
            raise SpecError(f"{what} {f.name} must be in {bounds}, got {value!r}")


def _urls(value: object) -> list[str]:
    """``--endpoint`` as given: one URL, or a list of them (the option is repeatable); SpecError without one."""
    urls = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else []
    if not urls or not all(isinstance(u, str) and u for u in urls):
        raise SpecError("the canary needs --endpoint URL (the OpenAI base URL, e.g. http://127.0.0.1:8000/v1)")
    return [str(u) for u in urls]


def _endpoint_keywords() -> dict[str, str]:
    """Keyword accepted by ``CanarySettings(...)`` -> the EndpointConfig field it sets."""
    from ...encode.endpoint import EndpointConfig

    names = [f.name for f in dataclasses.fields(EndpointConfig) if f.name != "api_key"]
    return {**{n: n for n in names}, **_ENDPOINT_ALIASES}


@dataclass(frozen=True, init=False)
class CanarySettings:
    """How to reach the endpoint (``endpoint_config``) and how strict to be. Holds the key's variable
    name, never the key.

    ``CanarySettings(endpoint=URL, served_model=..., timeout=..., min_cosine=...)``: endpoint keywords
    build the contained EndpointConfig through its own constructor; the others are canary fields.
    """

    endpoint_config: EndpointConfig
    api_key_env: str | None = _setting(None, "api_key_env")
    min_cosine: float = _setting(0.99, "canary_min_cosine", low=0.0, high=1.0, low_open=True)
    batch_min_cosine: float = _setting(0.999, low=0.0, high=1.0, low_open=True)
    max_ndcg_delta: float = _setting(0.005, "canary_max_ndcg_delta", low=0.0, high=1.0)
    min_overlap: float = _setting(0.9, "canary_min_overlap", low=0.0, high=1.0)
    # the share of requests a partial fault (one replica of a fleet) must reach to be caught with probability 0.99
    detect: float = _setting(0.1, "canary_detect", low=0.0, high=1.0, low_open=True)
    dimensions: tuple[int, ...] = _setting((), "canary_dimensions")
    deadline: float = _setting(3600.0, "canary_deadline", low=0.0, low_open=True)  # seconds for the whole canary
    suspect_models: tuple[str, ...] = _setting((), "suspect_models")  # other revisions the diagnosis tries
    # distinct texts whose served vectors are this close (cosine) while their references are not: a collision (issue 40)
    collision_cosine: float = _setting(0.99999, low=0.0, high=1.0, low_open=True)

    def __init__(self, endpoint: str | EndpointConfig | None = None, **values: object) -> None:
        """``endpoint``: the URL or a whole EndpointConfig; ``values``: canary fields, EndpointConfig
        fields (``served_model`` for ``model``), or ``endpoint_config`` (as ``dataclasses.replace`` passes)."""
        from ...encode.endpoint import EndpointConfig

        own = {f.name: f for f in dataclasses.fields(self) if f.name != "endpoint_config"}
        keywords = _endpoint_keywords()
        unknown = set(values) - set(own) - set(keywords) - {"endpoint_config"}
        if unknown:
            raise SpecError(
                f"unknown canary setting(s) {sorted(unknown)}; known: {', '.join(sorted(set(own) | set(keywords)))}"
            )
        endpoint_values = {keywords[k]: v for k, v in values.items() if k in keywords}
        endpoint_config = values.get("endpoint_config", endpoint if isinstance(endpoint, EndpointConfig) else None)
        if endpoint_config is not None and not isinstance(endpoint_config, EndpointConfig):
            raise SpecError(f"endpoint_config must be an EndpointConfig, got {type(endpoint_config).__name__}")
        if isinstance(endpoint, str):
            endpoint_values["url"] = endpoint
        if endpoint_config is None:
            if "url" not in endpoint_values:
                raise SpecError("the canary needs --endpoint URL (the OpenAI base URL, e.g. http://127.0.0.1:8000/v1)")
            config = EndpointConfig(**endpoint_values)  # type: ignore[arg-type]
        else:
            config = dataclasses.replace(endpoint_config, **endpoint_values)  # type: ignore[arg-type]
        if config.api_key is not None:
            raise SpecError("canary settings hold the key's variable name (api_key_env), never a key")
        object.__setattr__(self, "endpoint_config", config)
        for name, f in own.items():
            object.__setattr__(self, name, values.get(name, f.default))
        object.__setattr__(self, "dimensions", tuple(self.dimensions or ()))
        object.__setattr__(self, "suspect_models", tuple(str(m) for m in self.suspect_models or ()))
        self._validate()

    def _validate(self) -> None:
        check_bounds(self, "canary")
        if any(not isinstance(d, int) or d < 1 for d in self.dimensions):
            raise SpecError(f"canary dimensions must be positive integers, got {list(self.dimensions)}")

    # -- the endpoint, as the shells and reports name it --------------------------------------------
    @property
    def endpoint(self) -> str:
        return self.endpoint_config.url

    @property
    def served_model(self) -> str | None:
        return self.endpoint_config.model

    @property
    def timeout(self) -> float:
        return self.endpoint_config.timeout

    @property
    def concurrency(self) -> int:
        return self.endpoint_config.concurrency

    @property
    def batch_size(self) -> int:
        return self.endpoint_config.batch_size

    @property
    def encoding_format(self) -> str:
        return self.endpoint_config.encoding_format

    @property
    def max_retries(self) -> int:
        return self.endpoint_config.max_retries

    # -- options ------------------------------------------------------------------------------------
    @classmethod
    def option_fields(cls) -> dict[str, str]:
        """Option name (as ``collect`` returns it) -> the CanarySettings keyword that takes its value."""
        own = {f.metadata["option"]: f.name for f in dataclasses.fields(cls) if f.metadata.get("option")}
        return {**_ENDPOINT_OPTIONS, **own}

    @classmethod
    def option_of(cls, name: str) -> str:
        """The option name (as ``collect`` returns it) that sets the setting ``name``."""
        for option, target in cls.option_fields().items():
            if target == name or _ENDPOINT_ALIASES.get(name) == target:
                return option
        raise SpecError(f"canary setting {name!r} has no option; options: {', '.join(sorted(cls.option_fields()))}")

    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> CanarySettings:
        """From ``evalsuite.run.options.collect(namespace, CANARY_OPTIONS, prefix)``; raises SpecError."""
        fields_by_option = cls.option_fields()
        unknown = set(values) - set(fields_by_option)
        if unknown:
            raise SpecError(
                f"unknown canary setting(s) {sorted(unknown)}; known: {', '.join(sorted(fields_by_option))}"
            )
        urls = _urls(values.get("endpoint"))
        if len(urls) > 1:
            raise SpecError(
                f"{len(urls)} --endpoint URLs where one is checked; a fleet is checked member by member "
                "(CanarySettings.members_from_values)"
            )
        kwargs = {fields_by_option[k]: v for k, v in values.items() if v is not None and k != "endpoint"}
        return cls(urls[0], **kwargs)

    @classmethod
    def members_from_values(cls, values: Mapping[str, object]) -> tuple[CanarySettings, ...]:
        """One settings per ``--endpoint`` URL (a fleet's members, in the order given), the other values shared;
        SpecError without a URL or for a URL given twice."""
        urls = _urls(values.get("endpoint"))
        seen: set[str] = set()
        for url in urls:
            if url in seen:
                raise SpecError(f"--endpoint {url} is given twice; give each member of the fleet once")
            seen.add(url)
        return tuple(cls.from_values({**values, "endpoint": url}) for url in urls)

    @classmethod
    def option_default(cls, option: str) -> object:
        """The default of the setting behind a canary option name (as ``collect`` returns it), for help texts.
        None for ``endpoint`` (required) and for settings that are off unless given."""
        from ...encode.endpoint import EndpointConfig

        if option in _ENDPOINT_OPTIONS:
            f = {f.name: f for f in dataclasses.fields(EndpointConfig)}[_ENDPOINT_OPTIONS[option]]
        else:
            by_option = {f.metadata.get("option"): f for f in dataclasses.fields(cls)}
            if option not in by_option:
                raise SpecError(f"unknown canary option {option!r}; known: {', '.join(sorted(cls.option_fields()))}")
            f = by_option[option]
        return None if f.default is dataclasses.MISSING else f.default

    def api_key(self) -> Secret | None:
        """The key from the environment variable named by ``api_key_env`` (None when not configured)."""
        from ...encode.endpoint import Secret

        # SpecError naming the variable, never the value
        return Secret.from_env(self.api_key_env, "empty; export it (from your secret store) before running the canary")

    def to_dict(self) -> dict[str, object]:
        """For reports: the variable's name only, never its value."""
        own = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "endpoint_config"}
        own["dimensions"] = list(self.dimensions)
        own["suspect_models"] = list(self.suspect_models)
        return {
            "endpoint": self.endpoint,
            "served_model": self.served_model,
            **own,
            **{name: getattr(self.endpoint_config, name) for name in _REPORTED_ENDPOINT},
        }
