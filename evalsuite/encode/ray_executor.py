"""The reference encoder on Ray Data: an actor pool, one model per actor, results keyed by row.

Documents flow through ``ray.data.from_items(...).map_batches(_EncodeActor, concurrency=N)``; each
actor holds one :class:`~evalsuite.encode.local.LocalEncoder` (one GPU per actor where CUDA is present,
CPU actors otherwise). Texts are sorted by length before they enter Ray, so Ray's contiguous batches
hold texts of similar length, and each actor batches its rows by token length again. Ray does not
preserve order: every output row carries its input row number. Texts go to Ray in waves of
``wave_rows`` (one Ray Data execution each) and results are yielded as they arrive, so the embedding
cache keeps every finished wave when an actor or the cluster fails, and a re-run resumes from it. Ray is imported
only here, and only when the first text is encoded.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ..base.errors import ExecutorError
from ..model import ModelInfo
from .base import EncodedRows, EncodeStats, StreamingEncoder

_STATS = ("texts", "tokens", "padded_tokens", "truncated", "batches")


@dataclass(frozen=True)
class ActorSettings:
    """What every actor needs to build its model (picklable)."""

    info: ModelInfo
    dtype: str
    device: str
    max_length: int
    truncation: str
    batch_size: int
    trust_remote_code: bool
    poolings: tuple[str, ...]
    role: str


class _EncodeActor:
    """One model; encodes Ray batches ``{"row", "text"}`` into ``{"row", "v:<pooling>", "s:<counter>"}``."""

    def __init__(self, settings: ActorSettings) -> None:
        from .local import LocalEncoder

        self.settings = settings
        self.encoder = LocalEncoder(
            settings.info,
            dtype=settings.dtype,
            device=settings.device,
            max_length=settings.max_length,
            truncation=settings.truncation,
            batch_size=settings.batch_size,
            trust_remote_code=settings.trust_remote_code,
            progress=False,
        )

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        s = self.settings
        texts = [str(t) for t in batch["text"]]
        n = len(texts)
        before = self.encoder.stats_by_role.get(s.role, EncodeStats()).copy()
        vectors = {p: np.zeros((n, s.info.hidden_size), dtype=np.float32) for p in s.poolings}
        tokens = np.zeros(n, dtype=np.int32)
        truncated = np.zeros(n, dtype=bool)
        for part in self.encoder.encode_stream(texts, poolings=s.poolings, role=s.role):
            for p in s.poolings:
                vectors[p][part.rows] = part.vectors[p]
            tokens[part.rows] = part.tokens
            truncated[part.rows] = part.truncated
        delta = self.encoder.stats_by_role[s.role].minus(before)
        out: dict[str, np.ndarray] = {
            "row": np.asarray(batch["row"], dtype=np.int64),
            "tokens": tokens,
            "truncated": truncated,
        }
        out.update({f"v:{p}": vectors[p] for p in s.poolings})
        for name in _STATS:  # batch counters ride on the batch's first row
            col = np.zeros(n, dtype=np.int64)
            col[0] = getattr(delta, name)
            out[f"s:{name}"] = col
        return out


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast (``ExecutorError``) when a ``host:port`` / ``ray://host:port`` address does not answer."""
    if address == "auto" or address.startswith("local"):
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ExecutorError(f"--ray-address {address!r} is not HOST:PORT or ray://HOST:PORT")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise ExecutorError(
            f"the Ray cluster at {address} does not answer ({exc.strerror or exc}) within "
            f"{timeout:g} s; start it (ray start --head) or fix --ray-address"
        ) from exc


def ensure_ray(address: str | None, timeout: float = 5.0) -> None:
    """Connect to ``address`` (or start a local Ray) unless this process is connected already."""
    import ray

    if address is not None:
        check_reachable(address, timeout)
    if ray.is_initialized():
        return
    try:
        ray.init(
            address=address,
            ignore_reinit_error=True,
            log_to_driver=False,
            include_dashboard=False if address is None else None,
        )
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
        raise ExecutorError(f"cannot connect to Ray at {address or 'a new local instance'}: {exc}") from exc


class RayEncoder(StreamingEncoder):
    """An :class:`~evalsuite.encode.base.Encoder` that runs the reference model on a Ray actor pool."""

    def __init__(
        self,
        info: ModelInfo,
        *,
        dtype: str = "float32",
        device: str = "auto",
        max_length: int | None = None,
        truncation: str = "truncate",
        batch_size: int = 64,
        trust_remote_code: bool = False,
        address: str | None = None,
        actors: int = 1,
        rows_per_batch: int = 1024,
        wave_rows: int = 262_144,
        actor_cls: type = _EncodeActor,
        connect_timeout: float = 5.0,
    ) -> None:
        ensure_ray(address, connect_timeout)
        import ray

        gpus = int(ray.cluster_resources().get("GPU", 0))  # type: ignore[no-untyped-call]
        self.info = info
        self.dtype, self.max_length, self.truncation = dtype, max_length or info.default_max_length, truncation
        self.batch_size, self.trust_remote_code = batch_size, trust_remote_code
        self.actors, self.rows_per_batch, self.actor_cls = actors, rows_per_batch, actor_cls
        self.wave_rows = max(wave_rows, rows_per_batch)
        self.use_gpu = device != "cpu" and gpus > 0
        if device.startswith("cuda") and not self.use_gpu:
            raise ExecutorError(
                f"--device {device} was asked for but the Ray cluster has no GPU; use --device cpu or auto"
            )
        self.device = f"ray:{'cuda' if self.use_gpu else 'cpu'}x{actors}"
        self.stats_by_role: dict[str, EncodeStats] = {}

    def encode_stream(
        self,
        texts: Sequence[str],
        *,
        poolings: Sequence[str] = ("mean",),
        ids: Sequence[str] | None = None,
        role: str = "document",
    ) -> Iterator[EncodedRows]:
        """One :class:`EncodedRows` per Ray batch, in completion order."""
        import ray

        poolings = tuple(dict.fromkeys(poolings))
        stats = self.stats_by_role.setdefault(role, EncodeStats())
        if not texts:
            return
        t0 = time.perf_counter()
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        settings = ActorSettings(
            self.info,
            self.dtype,
            "cuda" if self.use_gpu else "cpu",
            self.max_length,
            self.truncation,
            self.batch_size,
            self.trust_remote_code,
            poolings,
            role,
        )
        done = 0
        try:
            # one Ray Data execution per wave: a failure loses at most the wave in flight, never the finished ones
            for start in range(0, len(order), self.wave_rows):
                items = [{"row": i, "text": texts[i]} for i in order[start : start + self.wave_rows]]
                blocks = max(1, -(-len(items) // self.rows_per_batch))
                ds = ray.data.from_items(items, override_num_blocks=blocks).map_batches(
                    self.actor_cls,
                    fn_constructor_kwargs={"settings": settings},
                    concurrency=self.actors,
                    batch_size=self.rows_per_batch,
                    batch_format="numpy",
                    num_gpus=1 if self.use_gpu else 0,
                    # actor options through the function Ray Data asks per actor (the **ray_remote_args form is
                    # deprecated): no restart, so a dead actor fails the wave instead of re-loading the model
                    ray_remote_args_fn=_no_restart,
                )
                for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
                    for name in _STATS:
                        setattr(stats, name, getattr(stats, name) + int(batch[f"s:{name}"].sum()))
                    done += len(batch["row"])
                    yield EncodedRows(
                        np.asarray(batch["row"], dtype=np.int64),
                        {p: np.asarray(batch[f"v:{p}"]) for p in poolings},
                        np.asarray(batch["tokens"], dtype=np.int32),
                        np.asarray(batch["truncated"], dtype=bool),
                    )
        except ray.exceptions.RayError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ExecutorError(
                f"the Ray executor failed after {done} of {len(texts)} {role} texts "
                f"({type(exc).__name__}: {first[:300]})"
            ) from exc
        finally:
            stats.seconds += time.perf_counter() - t0


def _no_restart() -> dict[str, object]:
    return {"max_restarts": 0}
