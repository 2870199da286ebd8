"""A real Ray cluster on loopback for tests and benchmarks: ``ray start --head`` and more ``ray start --address``
nodes, one CPU each, under one short temporary directory; this process is its driver. Every process is stopped by
its own id (never ``ray stop``, which would stop every Ray on the machine)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In a node's process before exec: SIGTERM when the process that started it dies (Linux)."""
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _descendants(pid: int) -> list[int]:
    out: list[int] = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split() if Path(f"/proc/{pid}").exists() else []:
        out += [int(child), *_descendants(int(child))]
    return out


class RayCluster:
    """``ray start`` processes on loopback, one per node (``--num-cpus 1`` each), under one short temporary
    directory; stopped by their process ids (never ``ray stop``, which would stop every Ray on the machine)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.node_ids: dict[str, str] = {}
        self.env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(REPO))

    def _spawn(self, name: str, args: list[str]) -> None:
        ray_bin = str(Path(sys.executable).parent / "ray")
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115 - held open for the node's lifetime
        self.procs[name] = subprocess.Popen(
            [ray_bin, "start", *args, "--num-cpus", "1", "--disable-usage-stats", "--block"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )

    def tail(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")[-2000:]

    def _alive(self) -> set[str]:
        import ray

        return {n["NodeID"] for n in ray.nodes() if n.get("Alive")}  # type: ignore[no-untyped-call]

    def start_head(self, timeout: float = 180.0) -> None:
        import ray

        self._spawn("head", ["--head", "--port", str(self.port), "--include-dashboard", "false",
                             "--temp-dir", str(self.root / "t")])  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            if self.procs["head"].poll() is not None:
                raise RuntimeError(f"ray start --head exited: {self.tail('head')}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Ray head did not listen within {timeout:.0f}s: {self.tail('head')}")
            time.sleep(0.5)
        for key in ("RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED"):
            os.environ[key] = self.env[key]
        ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING)
        (self.node_ids["head"],) = self._alive()

    def add_node(self, name: str, timeout: float = 180.0) -> str:
        """Start a node that joins the cluster and wait until the head sees it alive; its node id."""
        before = self._alive()
        self._spawn(name, ["--address", self.address])
        deadline = time.monotonic() + timeout
        while not (new := self._alive() - before):
            if self.procs[name].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Ray node {name} did not join within {timeout:.0f}s: {self.tail(name)}")
            time.sleep(0.5)
        self.node_ids[name] = new.pop()
        return self.node_ids[name]

    def raylet_pid(self, name: str) -> int:
        for pid in _descendants(self.procs[name].pid):
            with contextlib.suppress(OSError):
                if b"raylet" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]:
                    return pid
        raise RuntimeError(f"no raylet under Ray node {name} (pid {self.procs[name].pid})")

    def kill_node(self, name: str) -> None:
        """The node dies as a machine would: its raylet killed (SIGKILL, by its process id), then every other process
        of the node (its workers, agents and ``ray start``), by process id, before the raylet's death reaches them."""
        everything = _descendants(self.procs[name].pid)
        os.kill(self.raylet_pid(name), signal.SIGKILL)
        for pid in [*everything, self.procs[name].pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.procs[name].wait(timeout=30)

    def stop_node(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # raylets, workers and agents left in its process group

    def stop(self) -> None:
        import ray

        ray.shutdown()
        for name in reversed(list(self.procs)):
            self.stop_node(name)
        shutil.rmtree(self.root, ignore_errors=True)
