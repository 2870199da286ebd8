"""Per-session canary state: the endpoint client and the local reference, created lazily, with
the expensive results (canary vectors, the endpoint's retrieval run) cached for every check.

One context per session (per xdist worker). Nothing heavy is imported until a check runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ...base.errors import EndpointError
from ...base.memo import Memo
from ...encode.served import ServedModel, discover_served_model
from ...run import probes as texts
from .settings import CanarySettings

if TYPE_CHECKING:
    import numpy as np

    from ...contract import Contract
    from ...encode.contract_encoder import ContractEncoder
    from ...encode.endpoint import EndpointEncoder, Secret
    from ...encode.http import Deadline
    from ...run.pipeline import Prepared
    from ...run.result import Result

T = TypeVar("T")


class _FromSettings:
    """Sentinel: the key named by the settings' ``api_key_env``."""


FROM_SETTINGS = _FromSettings()
DEADLINE_WHAT = "the canary's overall deadline (--canary-deadline)"


def _make_deadline(seconds: float) -> Deadline:
    from ...encode.http import Deadline

    return Deadline.after(seconds, DEADLINE_WHAT)


@dataclass(frozen=True)
class CanarySet:
    """The canary texts under the contract: ids, roles, texts as given (prefix not yet applied)."""

    ids: tuple[str, ...]
    roles: tuple[str, ...]
    texts: tuple[str, ...]

    def rendered(self, contract: Contract) -> list[str]:
        """The model inputs the contract makes of these texts (what is sent to the server)."""
        return [contract.render(r, t) for r, t in zip(self.roles, self.texts, strict=False)]


class CanaryContext:
    """Shared by all checks of one session; see :func:`evalsuite.canary.embedding.registry.run_check`."""

    def __init__(
        self,
        settings: CanarySettings,
        prepared: Prepared,
        reference_encoder: Callable[[], ContractEncoder],
        reference_result: Callable[[], Result],
    ) -> None:
        self.settings = settings
        self.prepared = prepared
        self._reference_encoder = reference_encoder
        self._reference_result = reference_result
        self._cache = Memo(remember=(EndpointError,))
        self.deadline = _make_deadline(settings.deadline)

    def __repr__(self) -> str:
        return f"CanaryContext(endpoint={self.settings.endpoint!r}, model={self.prepared.contract.model!r})"

    def _memo(self, key: str, make: Callable[[], T]) -> T:
        """``make()`` once; an endpoint failure is remembered too, so later checks fail with it at once
        instead of asking the broken server again."""
        return self._cache.get(key, make)

    def shared(self, key: str, make: Callable[[], T]) -> T:
        """``make()`` once per context under ``key`` (for what other modules derive from it, e.g. a diagnosis)."""
        return self._memo(f"shared:{key}", make)

    def known(self, key: str) -> object | None:
        """What :meth:`shared` holds under ``key`` if a check has made it (nothing is made or requested)."""
        return self._cache.peek(f"shared:{key}")

    def deadline_passed(self) -> bool:
        """Whether the canary's overall deadline (``--canary-deadline``) has run out."""
        return self.deadline.expired()

    @property
    def contract(self) -> Contract:
        return self.prepared.contract

    @property
    def hidden_size(self) -> int:
        return int(self.prepared.model.hidden_size)

    # -- the two sides ----------------------------------------------------------------------------
    def reference(self) -> ContractEncoder:
        return self._memo("reference", self._reference_encoder)

    def reference_result(self) -> Result:
        return self._memo("reference_result", self._reference_result)

    def client(self) -> EndpointEncoder:
        """The endpoint encoder for the served model, checking every response against the contract."""

        def make() -> EndpointEncoder:
            served = self.served_model()
            return self.make_client(model=served.name, models=served.aliases)

        return self._memo("client", make)

    def probe_client(self) -> EndpointEncoder:
        """A client that checks no model name, for discovery (/v1/models, /info, /health)."""
        return self._memo("probe", lambda: self.make_client(model=None, models=frozenset()))

    def make_client(
        self,
        *,
        model: str | None,
        models: frozenset[str],
        api_key: Secret | _FromSettings | None = FROM_SETTINGS,
        max_retries: int | None = None,
        dim: int | None = None,
    ) -> EndpointEncoder:
        """A new client (the caller closes it); ``api_key=None`` sends no key, a Secret sends that one; ``dim``: the
        width it expects (None: the model's)."""
        from ...encode.endpoint import EndpointEncoder
        from ...encode.response import Expectation

        s = self.settings
        config = dataclasses.replace(
            s.endpoint_config,
            model=model,
            api_key=s.api_key() if isinstance(api_key, _FromSettings) else api_key,
            max_retries=s.endpoint_config.max_retries if max_retries is None else max_retries,
        )
        return EndpointEncoder(
            config,
            Expectation(dim=dim or self.hidden_size, normalized=self.contract.normalize, models=models),
            deadline=self.deadline,
        )

    def served_model(self) -> ServedModel:
        return self._memo("served_model", self._discover_served_model)

    def known_served_model(self) -> str | None:
        """The served model's name if a check has already looked it up (no request is made)."""
        served = self._cache.peek("served_model")
        return served.name if isinstance(served, ServedModel) else None

    def _discover_served_model(self) -> ServedModel:
        return discover_served_model(self.probe_client(), self.settings.served_model)

    def token_counts(self, texts: list[str]) -> list[int] | None:
        """Tokens of each model input (special tokens included, nothing truncated) under the reference's
        tokenizer; None when the reference has no tokenizer to ask."""
        tokenizer = self.tokenizer()
        if tokenizer is None:
            return None
        return [len(tokenizer(t, truncation=False)["input_ids"]) for t in texts]

    def tokenizer(self) -> Any:
        """The reference's tokenizer: the local encoder's, or (behind the embedding cache, which loads no model
        on a hit) the pinned tokenizer files loaded alone; None when there is none to load."""

        def make() -> Any:
            found = getattr(self.reference().encoder, "tokenizer", None)
            if found is not None:
                return found
            from transformers import AutoTokenizer

            info = self.prepared.model
            try:
                return AutoTokenizer.from_pretrained(
                    str(info.tokenizer_path),
                    local_files_only=True,
                    trust_remote_code=self.prepared.spec.trust_remote_code,
                )
            except (OSError, ValueError):
                return None

        return self._memo("tokenizer", make)

    def _document_tokens(self, text: str) -> int:
        """Tokens of a document's model input (prefix and special tokens included; 0 without a tokenizer)."""
        counts = self.token_counts([self.contract.render("document", text)])
        return counts[0] if counts else 0

    # -- canary texts -----------------------------------------------------------------------------
    def canary_set(self) -> CanarySet:
        def make() -> CanarySet:
            qs, ds = texts.queries(), texts.documents(self.contract.max_length, self._document_tokens)
            return CanarySet(
                ids=tuple(i for i, _ in qs + ds),
                roles=("query",) * len(qs) + ("document",) * len(ds),
                texts=tuple(t for _, t in qs + ds),
            )

        return self._memo("canary_set", make)

    def reference_vectors(self, dim: int | None = None) -> np.ndarray:
        """Reference vectors of the canary texts under the contract (or its Matryoshka ``dim``)."""

        def make() -> np.ndarray:
            import numpy as np

            from ...encode.contract_encoder import ContractEncoder

            ref = self.reference()
            if dim is not None:
                ref = ContractEncoder(ref.encoder, self.contract.replace(dim=dim))
            cs = self.canary_set()
            rows: dict[str, list[int]] = {"query": [], "document": []}
            for i, r in enumerate(cs.roles):
                rows[r].append(i)
            out = np.zeros((len(cs.ids), dim or self.contract.dim), dtype=np.float32)
            for role, idx in rows.items():
                if idx:
                    out[idx] = ref.embed([cs.texts[i] for i in idx], role)
            return out

        return self._memo(f"reference_vectors:{dim}", make)

    def served_vectors(self) -> np.ndarray:
        """Raw served vectors of the canary texts (prefixes applied by the client), checked, full size."""

        def make() -> np.ndarray:
            cs = self.canary_set()
            return self.client().embed(cs.rendered(self.contract), ids=list(cs.ids))

        return self._memo("served_vectors", make)

    def endpoint_result(self) -> Result:
        """The whole dataset through the endpoint, searched and scored like the reference."""

        def make() -> Result:
            import time

            from ...run.pipeline import encode_dataset, score
            from ...run.record import encode_timing, role_stats_since, stats_snapshot

            enc, c = self.client(), self.contract
            before = stats_snapshot(enc)
            t0 = time.perf_counter()
            q, d = encode_dataset(enc, c, self.prepared.dataset, [c.pooling])
            seconds = time.perf_counter() - t0
            return score(
                self.prepared,
                c,
                q[c.pooling],
                d[c.pooling],
                metrics=self.prepared.spec.metrics,
                timing=encode_timing(role_stats_since(enc, before), seconds),
                device=enc.device,
            )

        return self._memo("endpoint_result", make)

    def close(self) -> None:
        for key in ("client", "probe"):
            enc = cast("EndpointEncoder | None", self._cache.pop(key))
            if enc is not None:
                enc.close()
