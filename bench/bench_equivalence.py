"""Benchmark check: the same results from every execution path on a large synthetic corpus (a script, not a test).

    .venv/bin/python bench/bench_equivalence.py [--size 100000] [--queries 1000] [--chunk 65536]
                                                [--block 65536] [--paths memory,blockwise,...] [--json out.json]

Writes the synthetic BEIR corpus of ``bench_scale.py`` (the tiny random BERT of ``evalsuite/testing/tiny_bert.py``), then runs
``evalsuite run`` once per execution path, each as its own process:

- ``memory``: the default in-process run, every vector in RAM, one exact search; it fills a fresh cache;
- ``blockwise``: ``--chunk-size`` / ``--block-rows`` over the same cache: the corpus streamed from disk, the
  cached vectors written to a memory-mapped store, exact search block by block with a per-query top-k
  merge. The same vectors searched another way: ``run.trec`` must be byte-identical;
- ``blockwise-encode``: the same with ``--no-cache``: every vector encoded chunk by chunk;
- ``ray``: ``--executor ray --no-cache`` on a local Ray instance, chunked like ``blockwise``.

It prints each path's wall time and whether its ``results.json`` metrics, per-query scores, rankings
(document order per query in ``run.trec``) and ``run.trec`` bytes equal the ``memory`` run's; exit 1 when
metrics, per-query scores or rankings differ anywhere, or ``blockwise``'s bytes do. The paths that encode
again form other forward-pass batches (the in-memory encoder sorts the whole corpus by token length, a
chunked one each chunk), so a vector may differ in its last float32 bit and a printed score by one step:
their bytes are reported, not required.
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

PATHS = ("memory", "blockwise", "blockwise-encode", "ray")


def path_args(path: str, chunk: int, block: int, store: Path, cache: Path) -> list[str]:
    chunked = ["--chunk-size", str(chunk), "--block-rows", str(block), "--store-dir", str(store)]
    return {
        "memory": ["--cache-dir", str(cache)],
        "blockwise": [*chunked, "--cache-dir", str(cache)],
        "blockwise-encode": [*chunked, "--no-cache"],
        "ray": [*chunked, "--no-cache", "--executor", "ray"],
    }[path]


def rankings(trec: str) -> dict[str, list[str]]:
    """query id -> document ids in rank order, read from a TREC run file."""
    out: dict[str, list[tuple[int, str]]] = {}
    for line in trec.splitlines():
        qid, _, doc, rank, _, _ = line.split()
        out.setdefault(qid, []).append((int(rank), doc))
    return {q: [d for _, d in sorted(rows)] for q, rows in out.items()}


def compare(reference: Path, other: Path) -> dict[str, Any]:
    a, b = (json.loads((p / "results.json").read_text()) for p in (reference, other))
    ta, tb = ((p / "run.trec").read_text() for p in (reference, other))
    return {
        "metrics_equal": a["metrics"] == b["metrics"],
        "per_query_equal": a.get("per_query") == b.get("per_query"),
        "run_trec_bytes_equal": ta == tb,
        "rankings_equal": rankings(ta) == rankings(tb),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=65_536)
    ap.add_argument("--block", type=int, default=65_536)
    ap.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated subset of {','.join(PATHS)}")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    paths = [p for p in args.paths.split(",") if p]
    if not paths or paths[0] != "memory" or any(p not in PATHS for p in paths):
        ap.error(f"--paths: memory first (the reference), then any of {', '.join(PATHS[1:])}")

    from synthetic import vocabulary, write_dataset

    from evalsuite.testing.tiny_bert import write_tiny_bert

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-equal-") as tmp:
        root = Path(tmp)
        model = write_tiny_bert(root / "tiny")
        data = write_dataset(root / "data", args.size, args.queries, vocabulary(), gzip_corpus=False)
        for path in paths:
            out = root / f"out-{path}"
            cmd = [
                sys.executable,
                "-m",
                "evalsuite.cli",
                "run",
                "--model",
                str(model),
                "--dataset",
                str(data),
                "--device",
                "cpu",
                "--metrics",
                "ndcg@10,recall@100,mrr@10",
                "--out",
                str(out),
                *path_args(path, args.chunk, args.block, root / f"store-{path}", root / "cache"),
            ]
            t0 = time.perf_counter()
            done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
            seconds = time.perf_counter() - t0
            if done.returncode != 0:
                print(done.stdout[-2000:], done.stderr[-4000:], sep="\n", file=sys.stderr)
                print(f"{path}: evalsuite run exited {done.returncode}", file=sys.stderr)
                return 1
            row: dict[str, Any] = {"path": path, "size": args.size, "seconds": round(seconds, 1)}
            row["metrics"] = json.loads((out / "results.json").read_text())["metrics"]
            if path != "memory":
                row.update(compare(root / "out-memory", out))
            rows.append(row)
            print(json.dumps(row), flush=True)
    same = all(
        r.get("metrics_equal", True) and r.get("per_query_equal", True) and r.get("rankings_equal", True) for r in rows
    ) and all(r["run_trec_bytes_equal"] for r in rows if r["path"] == "blockwise")
    print(f"{args.size} documents, {args.queries} queries: " + ("every path equal" if same else "PATHS DIFFER"))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
