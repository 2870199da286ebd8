"""A served deployment as the encoder: one or several URLs serving one model (vLLM or SGLang with data
parallelism, Infinity, TEI, any OpenAI-compatible service).

Each URL gets a strict :class:`~evalsuite.encode.endpoint.EndpointEncoder` (response checks, bounded retries,
a deadline per request). Batches go into one shared queue that every URL's workers (``concurrency`` each)
pull from, so a faster server takes more; rows are put back by index, in input order. All URLs must serve
the same model name. A member that still fails after its retries stops the run with a message naming it:
no failover, since a fleet short of a member is not the deployment under test. Before the first texts are
sent, the members encode the same probe texts and one that disagrees with the others stops the run, named
(:mod:`evalsuite.encode.fleet_check`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.errors import SpecError
from .base import EncodeStats, ServedEncoder
from .endpoint_config import EndpointConfig, base_url
from .fleet_check import check_members, member_failed
from .served import ServedModel, discover_served_model, quote_names

if TYPE_CHECKING:
    from .endpoint import EndpointEncoder
    from .secret import Secret


@dataclass(frozen=True)
class FleetConfig:
    """The URLs of one deployment and how to call each; ``None`` takes the client's default
    (:class:`EndpointConfig`). ``dimensions`` is sent as the request's ``dimensions`` when set."""

    urls: tuple[str, ...]
    served_model: str | None = None
    api_key_env: str | None = None
    timeout: float | None = None
    concurrency: int | None = None  # requests in flight per URL
    batch_size: int | None = None
    encoding_format: str | None = None
    dimensions: int | None = None

    def __post_init__(self) -> None:
        if not self.urls:
            raise SpecError("a served fleet needs at least one --endpoint URL")
        urls = tuple(base_url(u) for u in self.urls)
        dup = sorted({u for u in urls if urls.count(u) > 1})
        if dup:
            raise SpecError(f"--endpoint {dup[0]} is given more than once; give each URL of the fleet once")
        object.__setattr__(self, "urls", urls)

    def api_key(self) -> Secret | None:
        """The key from ``$api_key_env`` (None when not configured); SpecError naming the variable, never a value."""
        from .secret import Secret

        return Secret.from_env(self.api_key_env, "is empty")

    def endpoint_config(self, url: str, *, model: str | None, api_key: Secret | None) -> EndpointConfig:
        default = EndpointConfig(url)
        return EndpointConfig(
            url,
            model=model,
            api_key=api_key,
            timeout=default.timeout if self.timeout is None else self.timeout,
            concurrency=default.concurrency if self.concurrency is None else self.concurrency,
            batch_size=default.batch_size if self.batch_size is None else self.batch_size,
            encoding_format=default.encoding_format if self.encoding_format is None else self.encoding_format,
        )


class FleetEncoder(ServedEncoder):
    """An :class:`~evalsuite.encode.base.Encoder` over the URLs of one served deployment (see the module)."""

    device = "endpoint"

    def __init__(
        self,
        members: Sequence[EndpointEncoder],
        served: ServedModel,
        *,
        listed: dict[str, tuple[str, ...]] | None = None,
        dimensions: int | None = None,
        render: Callable[[str, str], str] | None = None,
    ) -> None:
        """``render(role, text)`` makes the model inputs of the members' probe texts (the contract's
        :meth:`~evalsuite.contract.Contract.render`); with it, the members are checked against each other
        (:mod:`evalsuite.encode.fleet_check`) before the first texts are sent. None: no check."""
        if not members:
            raise SpecError("a served fleet needs at least one member")
        self.members = list(members)
        self.served = served
        self.listed = listed or {m.config.url: served.listed for m in self.members}
        self.dimensions = dimensions
        self.stats_by_role: dict[str, EncodeStats] = {}
        self.batches_by_url = {m.config.url: 0 for m in self.members}
        self.render = render
        self.members_checked = render is None

    @classmethod
    def connect(
        cls,
        config: FleetConfig,
        *,
        hidden_size: int,
        normalize: bool,
        render: Callable[[str, str], str] | None = None,
    ) -> FleetEncoder:
        """Ask every URL what it serves (``/v1/models``, or TEI's ``/info``); all must serve one model name."""
        from .endpoint import EndpointEncoder
        from .response import Expectation

        key = config.api_key()
        found: dict[str, ServedModel] = {}
        for url in config.urls:
            with EndpointEncoder(
                config.endpoint_config(url, model=None, api_key=key), Expectation(dim=hidden_size, normalized=normalize)
            ) as probe:
                served = discover_served_model(probe, config.served_model)
            if config.served_model is not None and served.listed and config.served_model not in served.listed:
                raise SpecError(
                    f"--endpoint {url} does not serve --served-model {config.served_model!r} (it lists "
                    f"{quote_names(served.listed)}); check the URL or the name"
                )
            found[url] = served
        names = {s.name for s in found.values()}
        if len(names) != 1:
            serving = "; ".join(f"{url} serves {s.name!r}" for url, s in found.items())
            raise SpecError(
                f"the --endpoint URLs serve different models ({serving}); every URL of a fleet must "
                "serve the same model: fix the deployment, or give only the URLs of one model"
            )
        aliases = frozenset().union(*(s.aliases for s in found.values()))
        first = next(iter(found.values()))
        served = ServedModel(name=first.name, listed=first.listed, aliases=aliases, source=first.source)
        expect = Expectation(dim=hidden_size, normalized=normalize, models=aliases)
        members = [
            EndpointEncoder(config.endpoint_config(url, model=served.name, api_key=key), expect) for url in config.urls
        ]
        listed = {u: s.listed for u, s in found.items()}
        return cls(members, served, listed=listed, dimensions=config.dimensions, render=render)

    def __repr__(self) -> str:
        return f"FleetEncoder(urls={self.urls!r}, model={self.served.name!r})"

    @property
    def urls(self) -> tuple[str, ...]:
        return tuple(m.config.url for m in self.members)

    @property
    def dim(self) -> int:
        """Columns of the vectors it returns: the requested ``dimensions``, else the full served size."""
        return self.dimensions or self.members[0].expect.dim

    @property
    def source(self) -> str:
        """The served identity in the embedding-cache key: model name and URLs (order does not matter)."""
        return f"endpoint {self.served.name} at {','.join(sorted(self.urls))}"

    @property
    def requests_by_url(self) -> dict[str, int]:
        return {m.config.url: m.requests for m in self.members}

    def manifest_entry(self) -> dict[str, Any]:
        """The ``encoder`` section of the manifest: who made the vectors."""
        return {
            "kind": "endpoint",
            "urls": list(self.urls),
            "served_model": self.served.name,
            "served_aliases": sorted(self.served.aliases),
            "listed": {u: list(v) for u, v in self.listed.items()},
            "identity_source": self.served.source,
            "dimensions_requested": self.dimensions,
            "pooling": "the server's own (the contract's pooling names it)",
            "batches": dict(self.batches_by_url),
            "requests": self.requests_by_url,
        }

    def close(self) -> None:
        for m in self.members:
            m.close()

    @property
    def requests_sent(self) -> int:
        return sum(self.requests_by_url.values())

    def embed(self, texts: list[str], *, ids: list[str] | None = None) -> np.ndarray:
        """Checked vectors for ``texts`` as sent, rows in input order; batches spread over the members."""
        n = len(texts)
        out = np.empty((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        if not self.members_checked and self.render is not None:
            check_members(self.members, self.render)  # before any of these texts is sent
            self.members_checked = True
        order = sorted(range(n), key=lambda i: len(texts[i]))
        size = self.members[0].config.batch_size
        work: queue.SimpleQueue[list[int]] = queue.SimpleQueue()
        for start in range(0, n, size):
            work.put(order[start : start + size])
        failed = threading.Event()
        errors: list[tuple[str, BaseException]] = []
        lock = threading.Lock()

        def worker(member: EndpointEncoder) -> None:
            while not failed.is_set():
                try:
                    rows = work.get_nowait()
                except queue.Empty:
                    return
                try:
                    out[rows] = member.embed(
                        [texts[i] for i in rows],
                        ids=[ids[i] for i in rows] if ids else None,
                        dimensions=self.dimensions,
                        batch_size=len(rows),
                        sort_by_length=False,
                    )
                except BaseException as exc:  # re-raised below, naming the member
                    with lock:
                        errors.append((member.config.url, exc))
                    failed.set()
                    return
                with lock:
                    self.batches_by_url[member.config.url] += 1

        # interleaved (one worker per member, then a second per member, ...) so that a call of few batches
        # still goes to every member
        most = max(m.config.concurrency for m in self.members)
        threads = [
            threading.Thread(target=worker, args=(m,), daemon=True, name=f"fleet-{k}-{j}")
            for j in range(most)
            for k, m in enumerate(self.members)
            if j < m.config.concurrency
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            url, exc = errors[0]
            if not isinstance(exc, Exception):
                raise exc
            raise member_failed(url, exc) from None
        return out
