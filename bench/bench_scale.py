"""Benchmark: bounded memory at scale, in-process and on Ray Data (a script, not a test).

    .venv/bin/python bench/bench_scale.py [--sizes 100000,300000,1000000] [--executors in-process,ray]
                                          [--modes reader,generated] [--gzip] [--queries 1000]
                                          [--chunk 65536] [--block 262144] [--json out.json]
    .venv/bin/python bench/bench_scale.py --default-path [--sizes 100000,300000,680000]
                                          [--doc-words 0,0,0] [--queries 1000] [--out out.json]

``--default-path`` (``default_path.py``) measures ``evalsuite run`` itself, default flags against
``--chunk-size 0``, each in its own process, on corpora below and above the automatic chunking threshold
(the last default corpus, 680,000 documents of 12-48 words, is ~136 MiB, over the 128 MiB): peak RSS, wall
time, whether the chunked path was chosen; a Markdown table and the RSS slope per 100k documents. The rest
of this doc is the other modes.

For each mode, corpus size and executor, one child process (so its peak RSS is its own) evaluates a
synthetic corpus (deterministic word sequences from the tiny model's vocabulary) with the tiny random
BERT of ``evalsuite/testing/tiny_bert.py``: chunk by chunk into a memory-mapped vector store, searched block by block
(FAISS per block, per-query top-k merge), scored with ranx against synthetic qrels (each query is a
prefix of one document, the relevant one).

- ``reader`` (the default): the parent writes the corpus as a BEIR directory (``corpus.jsonl``, or
  ``corpus.jsonl.gz`` with ``--gzip``; queries; qrels), line by line; the child runs the real
  ``pipeline.run`` with ``--chunk-size``, so the corpus goes through the streaming dataset reader
  (ids and byte offsets in memory, texts read from the file a chunk at a time).
- ``generated``: the child generates the texts chunk by chunk and calls ``encode_to_store`` and
  ``block_search`` itself; no dataset reader (the floor the reader mode is compared with).

It prints peak RSS (ru_maxrss of the driver; Ray actors are separate processes, listed apart), the
reader's indexing time, encode tokens/s, search and score seconds, the child's whole-process wall
time, and per mode the RSS slope per 100k documents against the vectors' own bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import doc_text, synthetic_queries, vocabulary, write_dataset  # noqa: E402

TARGETS = {"peak_rss_gb_1m": 1.5, "slope_over_vectors": 1.10, "ray_over_in_process": 1.3}


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def child_reader(size: int, executor: str, chunk: int, block: int, model_dir: Path, dataset: Path) -> dict[str, Any]:
    """The real pipeline over the BEIR directory: the streaming reader, chunked encode, block search."""
    t_start = time.perf_counter()
    from evalsuite.run.pipeline import prepare, run
    from evalsuite.run.spec import RunSpec

    if executor == "ray":
        import ray

        ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        spec = RunSpec(
            model=str(model_dir),
            dataset=str(dataset),
            device="cpu",
            dtype="float32",
            batch_size=64,
            use_cache=False,
            executor=executor,
            chunk_size=chunk,
            block_rows=block,
            store_dir=tmp,  # the vector store, and the spool of a compressed corpus
            metrics=("ndcg@10", "recall@100"),
        )
        t0 = time.perf_counter()
        prepared = prepare(spec)
        t1 = time.perf_counter()
        rss_loaded = rss_gb()
        result = run(spec, prepared)
    docs, queries = result.timing["documents"], result.timing["queries"]
    encode = result.timing["encode_seconds"] - queries["seconds"]
    return {
        "load_seconds": round(t1 - t0, 2),
        "peak_rss_gb_after_load": rss_loaded,
        "encode_seconds": round(encode, 2),  # reading the texts included, as generating them is in the other mode
        "tokens": docs["tokens"],
        "tokens_per_s": round(docs["tokens"] / max(encode, 1e-9)),
        "query_encode_seconds": round(queries["seconds"], 2),
        "search_seconds": round(result.timing["search_seconds"], 2),
        "score_seconds": round(result.timing["score_seconds"], 2),
        "process_seconds": round(time.perf_counter() - t_start, 2),
        "vector_bytes": size * prepared.model.hidden_size * 4,
        "metrics": {k: round(v, 4) for k, v in result.metrics.items()},
    }


def child_generated(size: int, executor: str, queries: int, chunk: int, block: int, model_dir: Path) -> dict[str, Any]:
    """Texts generated chunk by chunk straight into ``encode_to_store`` and ``block_search``: no reader."""
    t_start = time.perf_counter()
    from evalsuite.contract import build_contract
    from evalsuite.encode.chunked import encode_to_store
    from evalsuite.encode.executors import Execution, build_encoder
    from evalsuite.model import resolve_model
    from evalsuite.retrieval.vectors import finalize
    from evalsuite.run.blocksearch import block_search
    from evalsuite.run.spec import RunSpec
    from evalsuite.scoring.metrics import evaluate, search_depth

    words = vocabulary()
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

    def chunks() -> Iterator[tuple[list[str], list[str]]]:
        for start in range(0, size, chunk):
            stop = min(start + chunk, size)
            yield doc_ids[start:stop], [doc_text(i, words) for i in range(start, stop)]

    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        t0 = time.perf_counter()
        stores = encode_to_store(
            encoder, contract, chunks(), size, Path(tmp), poolings=[contract.pooling], dim=info.hidden_size
        )
        t1 = time.perf_counter()
        qids, qtexts, targets = synthetic_queries(size, queries, words)
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
        "load_seconds": 0.0,
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

    from evalsuite.encode.store import VectorStore
    from evalsuite.retrieval.search import build_index, search
    from evalsuite.run.blocksearch import block_search

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
    ap.add_argument(
        "--sizes", help="corpus sizes (default 100000,300000,1000000; --default-path: 100000,300000,680000)"
    )
    ap.add_argument("--executors", default="in-process,ray")
    ap.add_argument(
        "--modes",
        default="reader",
        help="reader (a corpus file through the streaming dataset reader and pipeline.run), generated "
        "(texts generated chunk by chunk, no reader), or both: reader,generated",
    )
    ap.add_argument("--gzip", action="store_true", help="reader mode: write corpus.jsonl.gz (read through a spool)")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=65536)
    ap.add_argument("--block", type=int, default=262144)
    ap.add_argument("--json", "--out", dest="json", help="write the rows as JSON here")
    ap.add_argument(
        "--default-path",
        action="store_true",
        help="measure `evalsuite run` with default flags against --chunk-size 0 (peak RSS, wall, chunked or not)",
    )
    ap.add_argument(
        "--doc-words",
        help="--default-path: per size, about how many words each document has (0, the default: 12-48 as "
        "generated; longer documents cross the threshold with fewer of them but tokenize slowly)",
    )
    ap.add_argument(
        "--search-check",
        metavar="SIZE,DIM",
        help="only compare block-wise search of random vectors "
        "with one in-memory IndexFlatIP (e.g. 1000000,384 with --queries 7000)",
    )
    ap.add_argument(
        "--pad-kib",
        help="--default-path: per size, pad every document record with a list field of this many KiB, which the "
        "reader skips: a few hundred documents cross the chunking threshold (checks the decision quickly; "
        "default 0 for every size)",
    )
    ap.add_argument("--child", nargs=3, metavar=("MODE", "SIZE", "EXECUTOR"), help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    ap.add_argument("--dataset", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, size, executor = args.child[0], int(args.child[1]), args.child[2]
        if mode == "reader":
            out = child_reader(size, executor, args.chunk, args.block, Path(args.model_dir), Path(args.dataset))
        else:
            out = child_generated(size, executor, args.queries, args.chunk, args.block, Path(args.model_dir))
        out = {"mode": mode, "size": size, "executor": executor, "peak_rss_gb": rss_gb(), **out}
        print(json.dumps(out))
        return 0
    if args.default_path:
        return default_path_main(args)
    args.sizes = args.sizes or "100000,300000,1000000"
    if args.search_check:
        size, dim = (int(x) for x in args.search_check.split(","))
        print(json.dumps(search_check(size, dim, args.queries, args.block)))
        return 0
    from evalsuite.testing.tiny_bert import write_tiny_bert

    modes = args.modes.split(",")
    if unknown := set(modes) - {"reader", "generated"}:
        ap.error(f"--modes: unknown {sorted(unknown)}; choose reader, generated")
    scratch = Path(tempfile.mkdtemp(prefix="bench-scale-data-"))
    model_dir = write_tiny_bert(scratch / "tiny")
    rows: list[dict[str, Any]] = []
    try:
        for mode in modes:
            for size in (int(s) for s in args.sizes.split(",")):
                dataset = scratch / f"beir-{size}"
                if mode == "reader" and not dataset.exists():
                    t0 = time.perf_counter()
                    write_dataset(dataset, size, args.queries, vocabulary(), args.gzip)
                    print(f"wrote {dataset} ({size} documents) in {time.perf_counter() - t0:.1f}s", flush=True)
                for executor in args.executors.split(","):
                    row = run_child(args, mode, size, executor, model_dir, dataset)
                    if row is not None:
                        rows.append(row)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summarize(rows, modes, args.executors.split(","))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def default_path_main(args: argparse.Namespace) -> int:
    from default_path import run_default_path, slopes, table, to_json

    sizes = [int(s) for s in (args.sizes or "100000,300000,680000").split(",")]
    words = [int(w) for w in (args.doc_words or ",".join(["0"] * len(sizes))).split(",")]
    pads = [int(p) for p in (args.pad_kib or ",".join(["0"] * len(sizes))).split(",")]
    for name, given in (("--doc-words", words), ("--pad-kib", pads)):
        if len(given) != len(sizes):
            raise SystemExit(f"{name}: {len(given)} values for {len(sizes)} sizes; give one per size")
    scratch = Path(tempfile.mkdtemp(prefix="bench-default-path-"))
    try:
        rows = run_default_path(sizes, args.queries, words, scratch, pads)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("\n".join(["", *table(rows), "", *slopes(rows)]))
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(rows), indent=2) + "\n")
    return 0


def run_child(
    args: argparse.Namespace, mode: str, size: int, executor: str, model_dir: Path, dataset: Path
) -> dict[str, Any] | None:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            mode,
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
            "--dataset",
            str(dataset),
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        print(f"{mode} {executor} {size}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    row: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    row["wall_seconds"] = round(time.perf_counter() - t0, 2)
    print(
        f"{mode:>9} {executor:>10} {size:>8} docs  peak RSS {row['peak_rss_gb']:.2f} GB  "
        f"read {row['load_seconds']}s  encode {row['encode_seconds']}s ({row['tokens_per_s']} tok/s)  "
        f"search {row['search_seconds']}s  score {row['score_seconds']}s  process {row['wall_seconds']}s  "
        f"{row['metrics']}",
        flush=True,
    )
    return row


def summarize(rows: list[dict[str, Any]], modes: list[str], executors: list[str]) -> None:
    for mode in modes:
        for executor in executors:
            mine = sorted((r for r in rows if r["executor"] == executor and r["mode"] == mode), key=lambda r: r["size"])
            if len(mine) >= 2:
                a, b = mine[0], mine[-1]
                per100k = (b["peak_rss_gb"] - a["peak_rss_gb"]) * 2**30 / ((b["size"] - a["size"]) / 1e5)
                vec100k = b["vector_bytes"] / b["size"] * 1e5
                print(
                    f"{mode} {executor}: RSS slope {per100k / 2**20:.1f} MB per 100k documents from {a['size']} to "
                    f"{b['size']} (vectors: {vec100k / 2**20:.1f} MB; target <= {TARGETS['slope_over_vectors']:.2f}x)"
                )
    by = {(r["mode"], r["executor"], r["size"]): r for r in rows}
    for mode, _, size in sorted(k for k in by if k[1] == "ray"):
        if (mode, "in-process", size) in by:
            ratio = by[(mode, "ray", size)]["encode_seconds"] / by[(mode, "in-process", size)]["encode_seconds"]
            print(
                f"{mode} {size} docs: Ray encode / in-process encode = {ratio:.2f} (target <= "
                f"{TARGETS['ray_over_in_process']})"
            )


if __name__ == "__main__":
    sys.exit(main())
