"""Benchmark: `evalsuite run` on a two-node Ray cluster against the in-process run, side by side (a script, not a test).

    .venv/bin/python bench/bench_ray.py [--workloads bundled,synthetic] [--docs 10000] [--queries 500]
                                        [--actors 2] [--repeat 1] [--json out.json]

Starts a real cluster on loopback (``ray start --head --num-cpus 1`` and a second ``ray start --address ...
--num-cpus 1``, `evalsuite/testing/ray_cluster.py`), then for each workload runs ``evalsuite run --no-cache`` as a
user would, each in its own process, alternately in-process and ``--executor ray --ray-address HEAD --ray-actors
N`` (and in-process again with ``OMP_NUM_THREADS=1``: torch's two intra-op threads on a shared 2-core machine
contend with other jobs, while each Ray actor runs one thread): the wall time of each process, the ratio Ray / in-process, the metrics of both (they must agree), and where
Ray's time went (``timing.executor``: waiting for the actors, loading the model, encoding, the driver's transfer;
``encoder.nodes``: rows and seconds per node). Workloads: ``bundled`` (the bundled model on the bundled dataset)
and ``synthetic`` (the tiny random BERT on ``--docs`` synthetic documents of bench_scale.py's corpus). The cluster
is stopped by process id at the end.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
TARGET = 1.3  # Ray's whole run at most this many times the in-process run's


def one_run(args: list[str], out: Path, env: dict[str, str]) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "evalsuite", "run", *args, "--device", "cpu", "--no-cache", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=out.parent,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"evalsuite run {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    results = json.loads((out / "results.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    return {
        "wall_seconds": round(wall, 2),
        "encode_seconds": results["timing"]["encode_seconds"],
        "metrics": {k: round(v, 4) for k, v in results["metrics"].items()},
        "ray_timing": results["timing"].get("executor"),
        "nodes": [
            {"node": n["node_id"][:8], "rows": n["rows"], "seconds": n["seconds"], "load_seconds": n["load_seconds"]}
            for n in manifest.get("encoder", {}).get("nodes", [])
        ],
        "stderr_lines": [line for line in proc.stderr.splitlines() if line.strip()],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="bundled,synthetic")
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--actors", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()

    from synthetic import vocabulary, write_dataset

    from evalsuite.testing.ray_cluster import RayCluster
    from evalsuite.testing.tiny_bert import write_tiny_bert

    work = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    workloads: dict[str, list[str]] = {}
    for name in args.workloads.split(","):
        if name == "bundled":
            workloads[name] = []
        elif name == "synthetic":
            data = write_dataset(work / "synthetic", args.docs, args.queries, vocabulary(), False)
            model = write_tiny_bert(work / "tiny")
            workloads[name] = ["--model", str(model), "--dataset", str(data)]
        else:
            raise SystemExit(f"unknown workload {name!r}: bundled, synthetic")
    cluster = RayCluster(Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp")))
    rows: list[dict[str, Any]] = []
    try:
        cluster.start_head()
        for i in range(1, args.actors):
            cluster.add_node(f"node{i}")
        print(f"cluster {cluster.address}: {len(cluster.node_ids)} nodes, 1 CPU each", flush=True)
        ray_args = ["--executor", "ray", "--ray-address", cluster.address, "--ray-actors", str(args.actors)]
        for name, wl in workloads.items():
            for r in range(args.repeat):
                for label, extra, env in (
                    ("in-process", [], cluster.env),
                    ("in-process-1-thread", [], dict(cluster.env, OMP_NUM_THREADS="1")),
                    ("ray", ray_args, cluster.env),
                ):
                    out = work / f"{name}-{label}-{r}"
                    row = {"workload": name, "executor": label, "repeat": r, **one_run([*wl, *extra], out, env)}
                    rows.append(row)
                    print(
                        json.dumps({k: row[k] for k in ("workload", "executor", "wall_seconds", "metrics")}), flush=True
                    )
    finally:
        cluster.stop()
    summarize(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


def summarize(rows: list[dict[str, Any]]) -> None:
    print(
        "\n| workload | in-process s | in-process, 1 thread s | Ray s | Ray / in-process | Ray / in-process 1 thread "
        "| same metrics | wait s | load (actor-s) | encode (actor-s) | transfer s | rows per node |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in dict.fromkeys(r["workload"] for r in rows):
        local = [r for r in rows if r["workload"] == name and r["executor"] == "in-process"]
        single = [r for r in rows if r["workload"] == name and r["executor"] == "in-process-1-thread"]
        remote = [r for r in rows if r["workload"] == name and r["executor"] == "ray"]
        a = sum(r["wall_seconds"] for r in local) / len(local)
        a1 = sum(r["wall_seconds"] for r in single) / len(single)
        b = sum(r["wall_seconds"] for r in remote) / len(remote)
        ex = remote[-1]["ray_timing"] or {}
        same = all(x["metrics"] == y["metrics"] for x, y in zip(local, remote, strict=True))
        nodes = ", ".join(f"{n['node']} {n['rows']}" for n in remote[-1]["nodes"])
        print(
            f"| {name} | {a:.1f} | {a1:.1f} | {b:.1f} | {b / a:.2f}x (target <= {TARGET}x) | {b / a1:.2f}x | {same} "
            f"| {ex.get('wait_seconds')} | "
            f"{ex.get('load_seconds')} | {ex.get('encode_seconds')} | {ex.get('transfer_seconds')} | {nodes} |"
        )
    for r in rows:
        if r["executor"] == "ray" and r["stderr_lines"]:
            print(f"{r['workload']} (ray) printed on stderr: {r['stderr_lines'][:5]}")


if __name__ == "__main__":
    raise SystemExit(main())
