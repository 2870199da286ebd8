"""The reference encoder on a Ray cluster: one plain actor pool per run, one model per actor, results keyed by row.

:class:`RayEncoder` sorts a call's texts by length (so a block holds texts of similar length; each actor batches
its rows by token length again), sends them to the pool a block of ``rows_per_block`` at a time and yields
every block's rows as they come back (Ray does not keep order: each row carries its input row number), so the
embedding cache keeps every finished block when an actor or a node fails and a re-run resumes from it. The pool
(:mod:`~evalsuite.encode.ray_pool`) is started on the first text and kept for the encoder's life, or for the
enclosing :func:`~evalsuite.encode.ray_pool.executor_scope`: the model is loaded once per actor for both roles
and every later call. Per node the encoder counts rows and seconds (the manifest's ``encoder.nodes``); its
:meth:`executor_timing` says how long the run waited for resources, loaded models, encoded and sent texts.
Ray is imported only here and in the pool, and only when the encoder is built.
"""

from __future__ import annotations

import logging
import socket
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..base.errors import ExecutorError
from ..model import ModelInfo
from .base import EncodedRows, EncodeStats, StreamingEncoder
from .ray_actor import STATS, BlockTask
from .ray_model import ModelSource, pack
from .ray_pool import ActorPool, NodeRecord, PoolKey, acquire
from .settings import EncoderSettings


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
    """Connect to ``address`` (or start a local Ray) unless this process is connected already; Ray's own
    informational lines stay out of the user's output."""
    import ray

    if address is not None:
        check_reachable(address, timeout)
    if ray.is_initialized():
        return
    # a local instance evalsuite starts itself: Ray's notice that its default (token authentication) is on asks
    # nothing of the user; its warning when authentication is off still shows
    notice = logging.getLogger("ray._private.authentication.authentication_token_setup")
    quiet = _DropNotice("Token authentication is enabled")
    notice.addFilter(quiet)
    try:
        ray.init(
            address=address,
            ignore_reinit_error=True,
            log_to_driver=False,
            logging_level=logging.WARNING,
            include_dashboard=False if address is None else None,
        )
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
        raise ExecutorError(f"cannot connect to Ray at {address or 'a new local instance'}: {exc}") from exc
    finally:
        notice.removeFilter(quiet)


class _DropNotice(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.prefix)


MIN_BLOCK = 16  # texts: a smaller block costs more in round trips than it gains in balance


def block_size(n: int, actors: int, rows_per_block: int) -> int:
    """Texts per block: at most ``rows_per_block``, and small enough that every actor gets two blocks of a
    short call (one computing, one waiting), so no actor idles while another holds the whole call."""
    return max(1, min(rows_per_block, max(MIN_BLOCK, -(-n // (2 * actors)))))


class RayEncoder(StreamingEncoder):
    """An :class:`~evalsuite.encode.base.Encoder` that runs the reference model on a Ray actor pool."""

    def __init__(
        self,
        info: ModelInfo,
        settings: EncoderSettings,
        *,
        address: str | None = None,
        actors: int = 1,
        rows_per_block: int = 512,
        ship_model: bool = False,
        model_path: str | None = None,
        connect_timeout: float = 5.0,
        progress: bool | None = None,
    ) -> None:
        from .local import progress_enabled

        ensure_ray(address, connect_timeout)
        import ray

        gpus = int(ray.cluster_resources().get("GPU", 0))  # type: ignore[no-untyped-call]
        self.info = info
        # what every actor's model is built with: the max length resolved here, the device the actor's own
        self.settings = replace(settings, max_length=settings.max_length or info.default_max_length)
        self.dtype, self.max_length, self.truncation = settings.dtype, self.settings.max_length, settings.truncation
        device = settings.device
        self.actors, self.rows_per_block = actors, rows_per_block
        self.use_gpu = device != "cpu" and gpus > 0
        if device.startswith("cuda") and not self.use_gpu:
            raise ExecutorError(
                f"--device {device} was asked for but the Ray cluster has no GPU; use --device cpu or auto"
            )
        self.source = ModelSource.pin(info, ship=ship_model, shared_path=model_path)
        # shipped: the driver reads the files now, once, into the object store; nodes never read the driver's path
        self.files = ray.put(pack(self.source)) if self.source.mode == "shipped" else None
        self.key = PoolKey(address, actors, self.use_gpu, self.source.digest, self.source.mode, model_path)
        self.device = f"ray:{'cuda' if self.use_gpu else 'cpu'}x{actors}"
        self.progress = progress_enabled() if progress is None else progress
        self.stats_by_role: dict[str, EncodeStats] = {}
        self.nodes: dict[str, NodeRecord] = {}  # this encoder's rows and seconds per node
        self.timing = {"wait_seconds": 0.0, "load_seconds": 0.0, "encode_seconds": 0.0, "transfer_seconds": 0.0}
        self._pool: ActorPool | None = None
        self._finalizer: Any = None  # weakref.finalize closing an owned pool

    # -- the pool -------------------------------------------------------------------------------------
    def pool(self) -> ActorPool:
        """The live pool: the scope's, or this encoder's own (started now, closed by :meth:`release`)."""
        if self._pool is not None and not self._pool.closed:
            return self._pool
        pool, owned = acquire(self.key, lambda: ActorPool.start(self.key, self.source, self.files))
        if pool.fresh:  # its start is charged to the first encoder that uses it
            pool.fresh = False
            self.timing["wait_seconds"] += pool.wait_seconds
            self.timing["load_seconds"] += pool.locate_seconds
        self._pool = pool
        if owned:
            self._finalizer = weakref.finalize(self, pool.close)
        return pool

    def release(self) -> None:
        """Close the pool this encoder owns (a scope's pool stays up for the scope's next encoder)."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._pool = None

    # -- what it records ------------------------------------------------------------------------------
    def manifest_entry(self) -> dict[str, object]:
        """The manifest's ``encoder`` section: the reference model, on which Ray nodes, with how many rows each."""
        return {
            "kind": "local",
            "executor": "ray",
            "actors": self.actors,
            "model_source": self.source.mode,
            "nodes": self.executor_report()["nodes"],
        }

    def executor_report(self) -> dict[str, Any]:
        """Since this encoder was built: seconds waiting for the actors' resources, loading models, encoding
        (summed over actors) and sending texts / receiving vectors on the driver; rows and seconds per node."""
        return {
            "timing": {"executor": "ray", "actors": self.actors, **{k: round(v, 4) for k, v in self.timing.items()}},
            "nodes": [n.to_dict() for n in sorted(self.nodes.values(), key=lambda n: (n.address, n.node_id))],
        }

    def _record(self, pool: ActorPool, out: dict[str, Any]) -> None:
        node_id = str(out["node_id"])
        base = pool.nodes[node_id]
        rec = self.nodes.setdefault(node_id, NodeRecord(base.node_id, base.address, base.resources, base.actors))
        seconds, load = float(out["seconds"]), float(out["load_seconds"])
        rec.rows += len(out["rows"])
        rec.seconds += seconds
        rec.load_seconds += load
        self.timing["encode_seconds"] += seconds
        self.timing["load_seconds"] += load

    # -- encoding -------------------------------------------------------------------------------------
    def encode_stream(
        self,
        texts: Sequence[str],
        *,
        poolings: Sequence[str] = ("mean",),
        ids: Sequence[str] | None = None,
        role: str = "document",
    ) -> Iterator[EncodedRows]:
        """One :class:`EncodedRows` per block, in completion order."""
        poolings = tuple(dict.fromkeys(poolings))
        stats = self.stats_by_role.setdefault(role, EncodeStats())
        if not texts:
            return
        t0 = time.perf_counter()
        order = np.array(sorted(range(len(texts)), key=lambda i: -len(texts[i])), dtype=np.int64)
        task = BlockTask(self.settings, poolings, role)
        size = block_size(len(texts), self.actors, self.rows_per_block)
        blocks = (
            (order[s : s + size], [texts[int(i)] for i in order[s : s + size]]) for s in range(0, len(order), size)
        )
        done = 0
        bar = None
        if self.progress:
            from tqdm import tqdm

            bar = tqdm(total=len(texts), desc=f"encode {role}s on Ray", unit="text", leave=False)
        try:
            pool = self.pool()
            for out in pool.run(blocks, task, self._io):
                self._record(pool, out)
                block_stats = out["stats"]
                for name in STATS:
                    setattr(stats, name, getattr(stats, name) + int(block_stats[name]))
                rows = np.asarray(out["rows"], dtype=np.int64)
                done += len(rows)
                if bar is not None:
                    bar.update(len(rows))
                yield EncodedRows(
                    rows,
                    {p: np.asarray(out[f"v:{p}"]) for p in poolings},
                    np.asarray(out["tokens"], dtype=np.int32),
                    np.asarray(out["truncated"], dtype=bool),
                )
        except ExecutorError as exc:
            raise ExecutorError(f"the Ray executor failed after {done} of {len(texts)} {role} texts: {exc}") from exc
        finally:
            stats.seconds += time.perf_counter() - t0
            if bar is not None:
                bar.close()

    def _io(self, seconds: float) -> None:
        self.timing["transfer_seconds"] += seconds
