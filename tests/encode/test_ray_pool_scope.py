"""Which Ray actor pool an encoder gets (evalsuite.encode.ray_pool.acquire): inside a scope one per cluster and
model, shared and closed at the scope's end; a caller's pools outlive its scopes; outside one the encoder owns
its pool. Pools here have no actors (the cluster runs are in tests/scale/test_ray_cluster.py)."""

from __future__ import annotations

import itertools

from evalsuite.encode.ray_pool import ActorPool, PoolKey, Pools, acquire, close_pools, executor_scope

KEY = PoolKey("127.0.0.1:1", 2, False, "d" * 64, "driver-path", None)
OTHER = PoolKey("127.0.0.1:1", 3, False, "d" * 64, "driver-path", None)


def starter():
    made: list[ActorPool] = []
    serial = itertools.count()

    def start(key: PoolKey = KEY) -> ActorPool:
        made.append(ActorPool(key, [], [], {}, wait_seconds=float(next(serial)), locate_seconds=0.0))
        return made[-1]

    return start, made


def test_a_scope_shares_one_pool_per_key_and_closes_them_at_its_end() -> None:
    start, made = starter()
    with executor_scope():
        a, owned_a = acquire(KEY, start)
        with executor_scope():  # a nested scope (a run inside a sweep) joins the outer one
            b, owned_b = acquire(KEY, start)
        c, _ = acquire(OTHER, lambda: start(OTHER))
        assert a is b and not owned_a and not owned_b and c is not a and not a.closed
        a.close()  # a pool that lost an actor is closed: the next encoder gets a new one
        d, _ = acquire(KEY, start)
        assert d is not a
    assert len(made) == 3 and all(p.closed for p in made)


def test_outside_a_scope_each_encoder_owns_its_pool() -> None:
    start, _ = starter()
    a, owned_a = acquire(KEY, start)
    b, owned_b = acquire(KEY, start)
    assert a is not b and owned_a and owned_b and not a.closed


def test_a_callers_pools_outlive_its_scopes_until_it_closes_them() -> None:
    start, _ = starter()
    pools: Pools = {}
    with executor_scope(pools):
        a, _ = acquire(KEY, start)
    with executor_scope(pools):
        b, _ = acquire(KEY, start)
    assert a is b and not a.closed
    close_pools(pools)
    assert a.closed and not pools
