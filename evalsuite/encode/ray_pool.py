"""A plain Ray actor pool owned for a whole run, and the scope that shares it between the run's encoders.

:class:`ActorPool` checks that the cluster can host its actors before it starts them (a typed error that says
what to do, never a silent "pending" wait), starts them spread over the nodes (one CPU each, or one GPU each),
waits until each has found and verified the model on its node (:mod:`~evalsuite.encode.ray_model`), then
encodes blocks of texts: each actor holds at most ``depth`` blocks, so the driver sends the texts a block at a
time and a failure loses only the blocks in flight. An actor that dies (its node killed, its process gone) ends
the call with :class:`ExecutorError` naming its node; the pool is then closed.

Inside :func:`executor_scope` every Ray encoder of the same cluster, size and model shares one pool (both roles,
every forward-pass key of a sweep, every run of a gated session), and the scope releases it at its end; outside
one, each encoder owns its pool and releases it with the encoder.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.errors import EvalsuiteError, ExecutorError
from .ray_actor import BlockTask, EncodeActor
from .ray_model import ModelSource

READY_TIMEOUT = 300.0  # seconds for every actor to start and find its model
RESOURCE_WAIT = 15.0  # seconds to wait for resources a finished pool is still returning
POLL = 2.0  # seconds between liveness checks while blocks are in flight


@dataclass(frozen=True)
class PoolKey:
    """What makes two encoders able to share a pool: the cluster, its size and the model actors hold."""

    address: str | None
    actors: int
    use_gpu: bool
    digest: str
    mode: str
    shared_path: str | None


@dataclass
class NodeRecord:
    """One node's share of the work: where it is, what it offers, and what its actors did."""

    node_id: str
    address: str
    resources: dict[str, float]
    actors: int = 0
    rows: int = 0
    seconds: float = 0.0
    load_seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "node_id": self.node_id,
            "address": self.address,
            "resources": self.resources,
            "actors": self.actors,
            "rows": self.rows,
            "seconds": round(self.seconds, 4),
            "load_seconds": round(self.load_seconds, 4),
        }


def _need(actors: int, use_gpu: bool) -> dict[str, float]:
    return {"CPU": float(actors), **({"GPU": float(actors)} if use_gpu else {})}


def check_resources(actors: int, use_gpu: bool, wait: float = RESOURCE_WAIT) -> None:
    """Refuse up front a pool the cluster cannot host: too few CPUs (GPUs) in all, or too few free for ``wait``
    seconds (what a pool just closed still holds is returned within them)."""
    import ray

    total = ray.cluster_resources()  # type: ignore[no-untyped-call]
    for name, n in _need(actors, use_gpu).items():
        if total.get(name, 0.0) < n:
            have = total.get(name, 0.0)
            raise ExecutorError(
                f"the Ray cluster has {have:g} {name}(s) in all, over {len(ray.nodes())} node(s); --ray-actors "  # type: ignore[no-untyped-call]
                f"{actors} needs {n:g} (one {name} per actor): lower --ray-actors"
                + (f" to {int(have)}" if have >= 1 else "")
                + f" or add nodes with {name}s to the cluster"
            )
    deadline = time.monotonic() + wait
    while True:
        free = ray.available_resources()  # type: ignore[no-untyped-call]
        short = {k: v for k, v in _need(actors, use_gpu).items() if free.get(k, 0.0) < v}
        if not short:
            return
        if time.monotonic() >= deadline:
            name, n = next(iter(short.items()))
            raise ExecutorError(
                f"the Ray cluster has {free.get(name, 0.0):g} of its {total[name]:g} {name}(s) free (other jobs hold "
                f"the rest); --ray-actors {actors} needs {n:g} and would wait for them: lower --ray-actors or "
                "wait until the other jobs finish"
            )
        time.sleep(0.5)


def _cause(exc: BaseException) -> BaseException:
    """The evalsuite error an actor raised (a model that cannot be read, a text over max length), if any."""
    inner = getattr(exc, "cause", None)
    return inner if isinstance(inner, EvalsuiteError) else exc


@dataclass
class ActorPool:
    """Started actors (``handles``), the node each runs on, and the seconds it took to get them ready."""

    key: PoolKey
    handles: list[Any]
    node_of: list[str]  # node id per actor
    nodes: dict[str, NodeRecord]
    wait_seconds: float
    locate_seconds: float
    depth: int = 2
    closed: bool = False
    fresh: bool = True  # no encoder has been charged its start yet

    @classmethod
    def start(
        cls, key: PoolKey, source: ModelSource, files: Any = None, *, ready_timeout: float = READY_TIMEOUT
    ) -> ActorPool:
        """``files``: the object-store reference of the packed model (shipped), resolved on each actor."""
        import ray

        check_resources(key.actors, key.use_gpu)
        remote: Any = ray.remote(EncodeActor).options(
            num_cpus=1,
            num_gpus=1 if key.use_gpu else 0,
            max_restarts=0,  # a dead actor fails its blocks instead of loading the model again unseen
            max_task_retries=0,
            scheduling_strategy="SPREAD",
        )
        t0 = time.perf_counter()
        handles: list[Any] = [remote.remote(source, files, "cuda" if key.use_gpu else "cpu") for _ in range(key.actors)]
        refs = [h.ready.remote() for h in handles]
        _, pending = ray.wait(refs, num_returns=len(refs), timeout=ready_timeout)
        try:
            if pending:
                raise ExecutorError(
                    f"{len(pending)} of {key.actors} Ray actors did not start within {ready_timeout:g} s (their "
                    "resources stayed pending or their workers did not come up); check the cluster (ray status) "
                    "or lower --ray-actors"
                )
            try:
                ready = ray.get(refs)
            except ray.exceptions.RayError as exc:
                cause = _cause(exc)
                if cause is exc:
                    raise ExecutorError(f"a Ray actor failed while it started: {_first_line(exc)}") from exc
                raise cause from None
        except BaseException:
            for h in handles:
                ray.kill(h)
            raise
        wall = time.perf_counter() - t0
        nodes: dict[str, NodeRecord] = {}
        offered = {n["NodeID"]: n.get("Resources", {}) for n in ray.nodes()}  # type: ignore[no-untyped-call]
        for r in ready:
            rec = nodes.setdefault(
                r["node_id"],
                NodeRecord(r["node_id"], r["address"], {k: float(v) for k, v in _plain(offered.get(r["node_id"], {}))}),
            )
            rec.actors += 1
        locate = max(float(r["locate_seconds"]) for r in ready)
        return cls(key, handles, [r["node_id"] for r in ready], nodes, max(0.0, wall - locate), locate)

    def run(
        self, blocks: Iterator[tuple[np.ndarray, list[str]]], task: BlockTask, on_io: Callable[[float], None]
    ) -> Iterator[dict[str, Any]]:
        """Each block's result as it arrives (any order); ``on_io`` gets the driver's seconds spent sending blocks
        and receiving results."""
        import ray

        inflight: dict[Any, int] = {}  # result ref -> actor index
        load: list[int] = [0] * len(self.handles)
        pending = iter(blocks)
        exhausted = False
        try:
            while True:
                while not exhausted and min(load) < self.depth:
                    nxt = next(pending, None)
                    if nxt is None:
                        exhausted = True
                        break
                    actor = load.index(min(load))
                    t0 = time.perf_counter()
                    inflight[self.handles[actor].encode.remote(nxt[0], nxt[1], task)] = actor
                    on_io(time.perf_counter() - t0)
                    load[actor] += 1
                if not inflight:
                    return
                done, _ = ray.wait(list(inflight), num_returns=1, timeout=POLL)
                if not done:
                    self._check_nodes(inflight.values())
                    continue
                actor = inflight.pop(done[0])
                load[actor] -= 1
                t0 = time.perf_counter()
                try:
                    out = ray.get(done[0])
                except ray.exceptions.RayActorError as exc:
                    raise ExecutorError(f"{self._where(actor)} died ({_first_line(exc)})") from exc
                except ray.exceptions.RayError as exc:
                    cause = _cause(exc)
                    if cause is exc:
                        raise ExecutorError(f"{self._where(actor)} failed ({_first_line(exc)})") from exc
                    raise cause from None
                on_io(time.perf_counter() - t0)
                yield out
        except BaseException:
            self.close()  # a pool that lost an actor is not used again; a scope starts a new one
            raise

    def _where(self, actor: int) -> str:
        node = self.nodes[self.node_of[actor]]
        return f"the Ray actor on node {node.node_id[:12]} ({node.address})"

    def _check_nodes(self, actors: Any) -> None:
        """A node that is gone ends the call now, naming it (Ray fails its tasks too, after its own timeouts)."""
        import ray

        alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}  # type: ignore[no-untyped-call]
        for actor in set(actors):
            if self.node_of[actor] not in alive:
                raise ExecutorError(f"{self._where(actor)} is gone: its node left the cluster")

    def close(self) -> None:
        """Stop the actors (their models and resources are released); idempotent."""
        if self.closed:
            return
        self.closed = True
        import ray

        if ray.is_initialized():
            for h in self.handles:
                ray.kill(h)


def _plain(resources: dict[str, Any]) -> list[tuple[str, Any]]:
    """A node's resources as a user reads them: no per-node marker resources, no object-store byte counts."""
    return sorted((k, v) for k, v in resources.items() if not k.startswith("node:") and "memory" not in k)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


Pools = dict[PoolKey, ActorPool]
_SCOPES: list[Pools] = []


@contextmanager
def executor_scope(pools: Pools | None = None) -> Iterator[None]:
    """Share one pool per cluster and model between every Ray encoder used inside (nested scopes join the
    outermost), and close the pools when the scope ends; with ``pools``, the caller keeps them across its scopes
    (a gated session, one scope per computation) and closes them with :func:`close_pools`."""
    if _SCOPES:
        yield
        return
    held: Pools = pools if pools is not None else {}
    _SCOPES.append(held)
    try:
        yield
    finally:
        _SCOPES.pop()
        if pools is None:
            close_pools(held)


def close_pools(pools: Pools) -> None:
    for pool in pools.values():
        pool.close()
    pools.clear()


def acquire(key: PoolKey, start: Callable[[], ActorPool]) -> tuple[ActorPool, bool]:
    """A live pool for ``key`` and whether the caller owns it (False: the scope does and will close it)."""
    if not _SCOPES:
        return start(), True
    pools = _SCOPES[-1]
    pool = pools.get(key)
    if pool is None or pool.closed:
        pool = pools[key] = start()
    return pool, False
