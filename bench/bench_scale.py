"""Benchmark: bounded memory at scale, in-process and on Ray Data (a script, not a test).

    .venv/bin/python bench/bench_scale.py [--sizes 100000,300000,1000000] [--executors in-process,ray]
                                          [--queries 1000] [--chunk 65536] [--block 262144] [--json out.json]

For each corpus size and executor, one child process (so its peak RSS is its own) generates a
synthetic corpus on the fly (deterministic word sequences from the tiny model's vocabulary, never
held whole), encodes it chunk by chunk with the tiny random BERT of ``conftest.py`` into a
memory-mapped vector store, searches it block by block (FAISS per block, per-query top-k merge)
and scores it with ranx against synthetic qrels. It prints peak RSS (ru_maxrss of the driver; Ray
actors are separate processes, listed apart), encode tokens/s, search and score seconds, the child's
whole-process wall time, and the RSS slope per 100k documents against the vectors' own bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
TARGETS = {"peak_rss_gb_1m": 1.5, "slope_over_vectors": 1.10, "ray_over_in_process": 1.3}


def doc_text(i: int, words: list[str]) -> str:
    rng = random.Random(i)
    return " ".join(rng.choice(words) for _ in range(rng.randint(12, 48)))


def child(size: int, executor: str, queries: int, chunk: int, block: int, model_dir: Path) -> dict[str, Any]:
    t_start = time.perf_counter()
    from conftest import _WORDS
    from evalsuite.blocksearch import block_search
    from evalsuite.encode.chunked import encode_to_store
    from evalsuite.encode.executors import Execution, build_encoder
    from evalsuite.metrics import evaluate, search_depth
    from evalsuite.model import resolve_model
    from evalsuite.spec import RunSpec, build_contract
    from evalsuite.vectors import finalize

    words = list(dict.fromkeys(_WORDS))
    info = resolve_model(str(model_dir))
    contract = build_contract(RunSpec(model=str(model_dir)), info)
    if executor == "ray":
        import ray

        ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False)
    encoder = build_encoder(
        info,
        Execution(executor=executor),
        dtype="float32",
        device="cpu",
        max_length=contract.max_length,
        truncation="truncate",
        batch_size=64,
        trust_remote_code=False,
    )
    doc_ids = [f"d{i}" for i in range(size)]
    metrics = ("ndcg@10", "recall@100")
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        t0 = time.perf_counter()
        stores = encode_to_store(
            encoder,
            contract,
            lambda ids: [doc_text(int(d[1:]), words) for d in ids],
            doc_ids,
            Path(tmp),
            chunk_size=chunk,
            poolings=[contract.pooling],
            dim=info.hidden_size,
        )
        t1 = time.perf_counter()
        # queries: a prefix of a random document's words; that document is the relevant one
        rng = random.Random(99)
        targets = [rng.randrange(size) for _ in range(queries)]
        qtexts = [" ".join(doc_text(t, words).split()[:8]) for t in targets]
        qids = [f"q{i}" for i in range(queries)]
        qv = encoder.encode(contract.render_all("query", qtexts), poolings=[contract.pooling], ids=qids, role="query")[
            contract.pooling
        ]
        qv = finalize(qv, contract.dim, contract.normalize)
        t2 = time.perf_counter()
        ranking = block_search(
            qv,
            stores[contract.pooling],
            query_ids=qids,
            doc_ids=doc_ids,
            k=search_depth(metrics),
            similarity=contract.similarity,
            dim=contract.dim,
            normalize=contract.normalize,
            block_rows=block,
        )
        t3 = time.perf_counter()
        aggregate, _ = evaluate({q: {f"d{t}": 1} for q, t in zip(qids, targets, strict=True)}, ranking, metrics)
        t4 = time.perf_counter()
    stats = encoder.stats_by_role["document"]
    return {
        "size": size,
        "executor": executor,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "encode_seconds": round(t1 - t0, 2),
        "tokens": stats.tokens,
        "tokens_per_s": round(stats.tokens / (t1 - t0)),
        "query_encode_seconds": round(t2 - t1, 2),
        "search_seconds": round(t3 - t2, 2),
        "score_seconds": round(t4 - t3, 2),
        "process_seconds": round(time.perf_counter() - t_start, 2),
        "vector_bytes": size * info.hidden_size * 4,
        "metrics": {k: round(v, 4) for k, v in aggregate.items()},
    }


def search_check(size: int, dim: int, queries: int, block: int) -> dict[str, Any]:
    """Random unit vectors (``size`` x ``dim``) in a store; block-wise top-100 vs one in-memory ``IndexFlatIP``."""
    import numpy as np

    from evalsuite.blocksearch import block_search
    from evalsuite.encode.store import VectorStore
    from evalsuite.search import build_index, search

    rng = np.random.default_rng(5)
    qv = rng.standard_normal((queries, dim), dtype=np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    doc_ids = [f"d{i}" for i in range(size)]
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        store = VectorStore.create(Path(tmp) / "v.npy", size, dim)
        for start in range(0, size, 65536):
            stop = min(start + 65536, size)
            store.write(start, rng.standard_normal((stop - start, dim), dtype=np.float32))
        t0 = time.perf_counter()
        ranking = block_search(
            qv,
            store,
            query_ids=[f"q{i}" for i in range(queries)],
            doc_ids=doc_ids,
            k=100,
            similarity="cosine",
            dim=dim,
            normalize=True,
            block_rows=block,
        )
        t1 = time.perf_counter()
        rss_block = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        docs = store.read_block(0, size)
        docs /= np.linalg.norm(docs, axis=1, keepdims=True)
        _, idx = build_index(docs, "cosine").search(qv, 100)
        t2 = time.perf_counter()
        ordered = search(qv, docs, query_ids=[f"q{i}" for i in range(queries)], doc_ids=doc_ids, k=100)
    # IndexFlatIP leaves exactly tied scores in index order; the documented tie order (and search()) does not
    same_set = sum(set(ranking[f"q{i}"]) == {doc_ids[j] for j in idx[i]} for i in range(queries))
    same_order = sum(list(ranking[q]) == list(ordered[q]) for q in ranking)
    return {
        "size": size,
        "dim": dim,
        "queries": queries,
        "block_search_seconds": round(t1 - t0, 1),
        "in_memory_seconds": round(t2 - t1, 1),
        "peak_rss_gb_block_search": round(rss_block, 2),
        "top100_set_equal_to_IndexFlatIP": same_set,
        "ranking_equal_to_in_memory_search": same_order,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,300000,1000000")
    ap.add_argument("--executors", default="in-process,ray")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=65536)
    ap.add_argument("--block", type=int, default=262144)
    ap.add_argument("--json")
    ap.add_argument(
        "--search-check",
        metavar="SIZE,DIM",
        help="only compare block-wise search of random vectors "
        "with one in-memory IndexFlatIP (e.g. 1000000,384 with --queries 7000)",
    )
    ap.add_argument("--child", nargs=2, metavar=("SIZE", "EXECUTOR"), help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        out = child(int(args.child[0]), args.child[1], args.queries, args.chunk, args.block, Path(args.model_dir))
        print(json.dumps(out))
        return 0
    if args.search_check:
        size, dim = (int(x) for x in args.search_check.split(","))
        print(json.dumps(search_check(size, dim, args.queries, args.block)))
        return 0
    from conftest import write_tiny_bert

    model_dir = write_tiny_bert(Path(tempfile.mkdtemp(prefix="bench-tiny-")))
    rows: list[dict[str, Any]] = []
    for executor in args.executors.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    str(size),
                    executor,
                    "--queries",
                    str(args.queries),
                    "--chunk",
                    str(args.chunk),
                    "--block",
                    str(args.block),
                    "--model-dir",
                    str(model_dir),
                ],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                print(f"{executor} {size}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row["wall_seconds"] = round(time.perf_counter() - t0, 2)
            rows.append(row)
            print(
                f"{executor:>10} {size:>8} docs  peak RSS {row['peak_rss_gb']:.2f} GB  encode {row['encode_seconds']}s "
                f"({row['tokens_per_s']} tok/s)  search {row['search_seconds']}s  score {row['score_seconds']}s  "
                f"process {row['wall_seconds']}s  {row['metrics']}",
                flush=True,
            )
    for executor in args.executors.split(","):
        mine = sorted((r for r in rows if r["executor"] == executor), key=lambda r: r["size"])
        if len(mine) >= 2:
            a, b = mine[0], mine[-1]
            per100k = (b["peak_rss_gb"] - a["peak_rss_gb"]) * 2**30 / ((b["size"] - a["size"]) / 1e5)
            vec100k = b["vector_bytes"] / b["size"] * 1e5
            print(
                f"{executor}: RSS slope {per100k / 2**20:.1f} MB per 100k documents (vectors: {vec100k / 2**20:.1f} "
                f"MB; target <= {TARGETS['slope_over_vectors']:.2f}x)"
            )
    by = {(r["executor"], r["size"]): r for r in rows}
    for size in sorted({r["size"] for r in rows}):
        if ("ray", size) in by and ("in-process", size) in by:
            ratio = by[("ray", size)]["encode_seconds"] / by[("in-process", size)]["encode_seconds"]
            print(
                f"{size} docs: Ray encode / in-process encode = {ratio:.2f} (target <= "
                f"{TARGETS['ray_over_in_process']})"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
