"""Benchmark: a 12-cell sweep against one plain encode, side by side in one run.

    .venv/bin/python bench/bench_sweep.py [--docs 5000] [--device cpu] [--json out.json]

On one corpus (fixtures/minibeir, replicated with small deterministic perturbations to
``--docs`` documents, written to a temporary BEIR directory) it measures, each step in its
own child process so peak memory is that step's alone:

  (a) sentence-transformers ``encode`` of queries and documents, one config (model load included);
  (b) ``evalsuite run``, one config, cold cache (prepare, encode, search, score);
  (c) ``evalsuite sweep`` over 3 poolings x 4 dims (--grid, 12 cells), cold cache;
  (d) the same sweep, warm (embedding cache and result cache), in process: prepare + run_sweep;
  (e) the floor: corpus tokens x model FLOPs/token / this machine's measured matmul rate,
      and the fraction of it (a)-(c) reach;
  (f) peak resident memory (ru_maxrss) of (b) and (c);
  (v) the sweep as a whole process (``evalsuite sweep``, from spawn to exit: interpreter start, imports,
      model resolution, dataset, reports written) with the vectors cached but no result cache (a copy of
      (c)'s cache without its results): every contract searched with FAISS and scored with ranx, every
      statistic and plot computed, and all of it stored;
  (w) the same command again on the same cache: the warm sweep a release pipeline waits for, and which
      heavy libraries that process imported;
  (A) sentence-transformers ``encode`` of queries and documents as a whole process, spawn to exit (imports,
      dataset, model load, encode);
  (C) ``evalsuite sweep`` 3 poolings x 4 dims ``--grid`` as a whole process on an empty cache, spawn to exit
      (imports, model resolution, dataset, encode, search, score, statistics, plots, reports written): the cold
      grid a user waits for. The last line printed is ``ratio cold-grid/sentence-transformers X.XX``, (C) / (A)
      (fastest of each), with both processes' CPU time (user + system) beside it.

Imports and ranx's one-off numba kernel load happen before the clock of (a)-(d); (v) and (w) time the
whole process. Every child may write bytecode (PYTHONDONTWRITEBYTECODE is dropped), as an installed
package has it. With ``--repeat N`` the steps run round-robin N times and the fastest run of each is
reported. ``--steps`` runs a subset (e.g. ``--steps AC`` for the ratio alone).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "minibeir"
POOLINGS = "cls,mean,last"
DIMS = "384,256,128,64"
TARGETS = {"b": 1.0, "c": 1.3, "d": 0.1, "w": 0.05}
HEAVY = ("torch", "transformers", "tokenizers", "faiss", "ranx", "numba", "scipy", "matplotlib")
# (A): sentence-transformers as a user runs it, in one process (argv: dataset, device)
_ST = (
    "import sys; from sentence_transformers import SentenceTransformer; "
    "from evalsuite.datasets import load_dataset; from evalsuite.model import bundled_model_dir; "
    "ds = load_dataset(sys.argv[1]); q = [ds.queries[i] for i in ds.query_ids]; d = [ds.corpus[i] for i in ds.doc_ids]; "
    "m = SentenceTransformer(str(bundled_model_dir()), device=sys.argv[2]); "
    "m.encode(q, batch_size=32, normalize_embeddings=True); m.encode(d, batch_size=32, normalize_embeddings=True)"
)
# the CLI in a child that reports the heavy modules it imported and its peak RSS, after it exits normally
_CLI = (
    "import sys, json, atexit, resource; from evalsuite.cli import main; "
    "atexit.register(lambda: print('HEAVY ' + json.dumps([sorted(m for m in %r if m in sys.modules), "
    "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]), file=sys.stderr)); "
    "sys.exit(main(sys.argv[1:]))".replace("%r", repr(HEAVY))
)


def child_env() -> dict[str, str]:
    """The children's environment: no progress bars, and bytecode written as an installed package has it."""
    env = dict(os.environ, TQDM_DISABLE="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


# -- corpus ----------------------------------------------------------------------------------
def _perturb(text: str, rng: random.Random) -> str:
    words = text.split()
    if len(words) > 4:
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
        del words[rng.randrange(len(words))]
    return " ".join(words)


def build_corpus(out: Path, n_docs: int, seed: int = 13) -> dict[str, int]:
    """fixtures/minibeir with its corpus grown to ``n_docs`` by perturbed copies (qrels unchanged)."""
    rng = random.Random(seed)
    docs = [json.loads(line) for line in (FIXTURE / "corpus.jsonl").read_text().splitlines() if line.strip()]
    rows = list(docs)
    copy = 1
    while len(rows) < n_docs:
        for d in docs:
            if len(rows) >= n_docs:
                break
            rows.append({"_id": f"{d['_id']}~{copy}", "title": d.get("title", ""), "text": _perturb(d["text"], rng)})
        copy += 1
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    (out / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / "queries.jsonl").write_text((FIXTURE / "queries.jsonl").read_text())
    (out / "qrels" / "test.tsv").write_text((FIXTURE / "qrels" / "test.tsv").read_text())
    return {"documents": len(rows), "queries": len((FIXTURE / "queries.jsonl").read_text().splitlines())}


# -- child steps (run with: bench_sweep.py --child STEP --dataset DIR ...) ---------------------
def _warm_ranx() -> None:
    """Load ranx's numba kernels. Small inputs and larger ones (10+ queries, rankings longer than the
    cutoffs) take different kernels in ranx, each loaded on first use: warm both."""
    from evalsuite.scoring.metrics import evaluate

    qrels = {f"q{i}": {"d1": 1} for i in range(20)}
    run = {f"q{i}": {f"d{j}": 1.0 / (j + 1) for j in range(120)} for i in range(20)}
    evaluate({"q": {"d": 1}}, {"q": {"d": 1.0, "e": 0.5}}, ["ndcg@10", "recall@10", "recall@100", "mrr@10"])
    evaluate(qrels, run, ["ndcg@10", "recall@10", "recall@100", "mrr@10"])


def child(step: str, dataset: str, device: str, cache_dir: str) -> dict[str, Any]:
    import torch  # noqa: F401  (imported before the clock, as for every step)

    from evalsuite.model import bundled_model_dir

    out: dict[str, Any] = {"step": step}
    # Step (a) imports sentence-transformers, hence transformers, before its clock: so do the others.
    import transformers  # noqa: F401
    from transformers import AutoModel, AutoTokenizer  # noqa: F401

    if step == "a":
        from sentence_transformers import SentenceTransformer

        from evalsuite.datasets import load_dataset

        ds = load_dataset(dataset)
        queries = [ds.queries[q] for q in ds.query_ids]
        docs = [ds.corpus[d] for d in ds.doc_ids]
        t0 = time.perf_counter()
        model = SentenceTransformer(str(bundled_model_dir()), device="cpu" if device == "auto" else device)
        model.encode(queries, batch_size=32, normalize_embeddings=True)
        model.encode(docs, batch_size=32, normalize_embeddings=True)
        out["seconds"] = time.perf_counter() - t0
    else:
        from evalsuite.run.pipeline import prepare, run
        from evalsuite.run.spec import RunSpec
        from evalsuite.sweep import parse_vary, plan_cells, run_sweep

        _warm_ranx()
        spec = RunSpec(dataset=dataset, device=device, cache_dir=cache_dir)
        t0 = time.perf_counter()
        prepared = prepare(spec)
        if step == "b":
            result = run(spec, prepared)
            t = result.timing
            out.update(
                encode_seconds=t["encode_seconds"],
                tokens=t["queries"]["tokens"] + t["documents"]["tokens"],
                padded_tokens=t["queries"]["padded_tokens"] + t["documents"]["padded_tokens"],
                metrics=result.metrics,
            )
        else:
            axes = parse_vary([f"pooling={POOLINGS}", f"dim={DIMS}"])
            cells = plan_cells(prepared.contract, axes, grid=True, info=prepared.model)
            result = run_sweep(prepared, cells, axes=axes, grid=True)
            st = result.stats
            out.update(
                cells=len(result.cells),
                encode_seconds=st.encode_seconds,
                score_seconds=st.score_seconds,
                passes_by_role=st.passes_by_role,
                texts_encoded=st.texts_encoded_by_role,
                models_loaded=st.models_loaded,
                cache=st.cache,
                result_cache=st.result_cache,
            )
        out["seconds"] = time.perf_counter() - t0
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def run_child(step: str, dataset: Path, device: str, cache_dir: Path) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        step,
        "--dataset",
        str(dataset),
        "--device",
        device,
        "--cache-dir",
        str(cache_dir),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env())
    if proc.returncode != 0:
        raise SystemExit(f"step {step} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_whole_process(dataset: Path, device: str, cache_dir: Path, out: Path) -> dict[str, Any]:
    """The warm sweep as one process, timed from spawn to exit (imports, model resolution, reports)."""
    cmd = [
        sys.executable,
        "-c",
        _CLI,
        "sweep",
        "--dataset",
        str(dataset),
        "--device",
        device,
        "--cache-dir",
        str(cache_dir),
        "--vary",
        f"pooling={POOLINGS}",
        "--vary",
        f"dim={DIMS}",
        "--grid",
        "--out",
        str(out),
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env())
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"whole-process sweep failed:\n{proc.stderr[-4000:]}")
    heavy, rss = next(json.loads(line[6:]) for line in proc.stderr.splitlines() if line.startswith("HEAVY "))
    reused = next((line for line in proc.stdout.splitlines() if line.startswith("result cache:")), "")
    return {"seconds": seconds, "imported": heavy, "peak_rss_mb": rss, "result_cache": reused}


def run_timed(cmd: list[str]) -> dict[str, Any]:
    """A whole process, spawn to exit: wall seconds and its CPU seconds (user + system, every thread)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env())
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed:\n{proc.stderr[-4000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": seconds, "cpu_seconds": cpu, "peak_rss_mb": after.ru_maxrss / 1024}


def whole_st(dataset: Path, device: str) -> dict[str, Any]:
    return run_timed([sys.executable, "-c", _ST, str(dataset), "cpu" if device == "auto" else device])


def whole_cold_sweep(dataset: Path, device: str, cache_dir: Path, out: Path) -> dict[str, Any]:
    grid = ["--vary", f"pooling={POOLINGS}", "--vary", f"dim={DIMS}", "--grid"]
    cmd = [sys.executable, "-m", "evalsuite", "sweep", "--dataset", str(dataset), "--device", device]
    return run_timed([*cmd, "--cache-dir", str(cache_dir), *grid, "--out", str(out)])


# -- floor -------------------------------------------------------------------------------------
def matmul_gflops(device: str, seconds: float = 3.0) -> float:
    """Sustained float32 GEMM rate at the encoder's shapes (tokens x hidden @ hidden x 4*hidden)."""
    import torch

    dev = "cuda" if device in ("auto", "cuda") and torch.cuda.is_available() else "cpu"
    a = torch.randn(2048, 384, device=dev)
    b = torch.randn(384, 1536, device=dev)
    for _ in range(3):
        a @ b
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ b
        n += 1
    if dev == "cuda":
        torch.cuda.synchronize()
    return 2 * 2048 * 384 * 1536 * n / (time.perf_counter() - t0) / 1e9


def flops_per_token(avg_len: float) -> float:
    """Dense FLOPs per token of the bundled BERT: 2 x non-embedding weights + attention scores/mix."""
    from transformers import AutoConfig

    from evalsuite.model import resolve_model

    cfg = AutoConfig.from_pretrained(str(resolve_model(None).path), local_files_only=True)
    h, layers, ff = cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size
    weights = layers * (4 * h * h + 2 * h * ff)
    attention = layers * 2 * 2 * avg_len * h
    return 2 * weights + attention


# -- main ----------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=5000, help="corpus size (default 5000)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto (default cpu)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per step; the fastest is reported (default 1)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--steps", default="abcdvwAC", help="the steps to run (default abcdvwAC: all)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.dataset, args.device, args.cache_dir)))
        return 0

    import torch

    with tempfile.TemporaryDirectory(prefix="evalsuite-bench-") as tmp:
        root = Path(tmp)
        counts = build_corpus(root / "data", args.docs)
        print(
            f"corpus: {counts['documents']} documents, {counts['queries']} queries; device {args.device}; "
            f"torch threads {torch.get_num_threads()}; {os.cpu_count()} CPUs",
            flush=True,
        )
        res: dict[str, Any] = {"corpus": counts, "device": args.device, "torch_threads": torch.get_num_threads()}
        labels = {
            "a": "(a) sentence-transformers encode",
            "b": "(b) evalsuite run, cold",
            "c": "(c) sweep 12 cells, cold",
            "d": "(d) sweep 12 cells, warm",
        }
        for rep in range(args.repeat):  # round-robin, so background load hits every step alike
            for step in "AC":  # whole processes, side by side
                if step not in args.steps:
                    continue
                if step == "A":
                    got = whole_st(root / "data", args.device)
                else:
                    got = whole_cold_sweep(root / "data", args.device, root / f"cache-C-{rep}", root / f"out-C-{rep}")
                label = "(A) sentence-transformers, process" if step == "A" else "(C) cold grid sweep, process"
                print(
                    f"{label:<36}{got['seconds']:8.1f} s  CPU {got['cpu_seconds']:.1f} s  (run {rep + 1})", flush=True
                )
                if step not in res or got["seconds"] < res[step]["seconds"]:
                    res[step] = got
            for step in "abcd":
                if step not in args.steps:
                    continue
                cache = root / f"cache-{step if step != 'd' else 'c'}-{rep}"
                got = run_child(step, root / "data", args.device, cache)
                print(f"{labels[step]:<36}{got['seconds']:8.1f} s  (run {rep + 1})", flush=True)
                if step not in res or got["seconds"] < res[step]["seconds"]:
                    res[step] = got
            if "c" not in args.steps or not {"v", "w"} & set(args.steps):
                continue
            # (c)'s embedding cache without its result cache: (v) computes and stores every result (and the
            # reports' statistics and plots, which (c) did not write); (w) is the same command run again
            cache = root / f"cache-v-{rep}"
            shutil.copytree(root / f"cache-c-{rep}", cache, ignore=shutil.ignore_patterns("results"))
            for step, label in (
                ("v", "(v) sweep warm vectors, whole process"),
                ("w", "(w) sweep warm, whole process"),
            ):
                got = run_whole_process(root / "data", args.device, cache, root / f"out-{step}")
                print(
                    f"{label:<36}{got['seconds']:8.1f} s  (run {rep + 1}; imported "
                    f"{', '.join(got['imported']) or 'none of ' + ', '.join(HEAVY)})",
                    flush=True,
                )
                if step not in res or got["seconds"] < res[step]["seconds"]:
                    res[step] = got

    if set("abcdvw") <= set(args.steps):
        report(res, counts, args.device)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n")
    if "A" in res and "C" in res:
        a, c = res["A"], res["C"]
        print(
            f"(A) {a['seconds']:.1f} s (CPU {a['cpu_seconds']:.1f} s), (C) {c['seconds']:.1f} s (CPU "
            f"{c['cpu_seconds']:.1f} s): CPU cold-grid/sentence-transformers {c['cpu_seconds'] / a['cpu_seconds']:.2f}"
        )
        print(f"ratio cold-grid/sentence-transformers {c['seconds'] / a['seconds']:.2f}")
    return 0


def report(res: dict[str, Any], counts: dict[str, int], device: str) -> None:
    """The table of (a)-(w) against (a), the floor and the targets."""
    tokens = res["b"]["tokens"]
    avg_len = tokens / (counts["documents"] + counts["queries"])
    gflops = matmul_gflops(device)
    floor = tokens * flops_per_token(avg_len) / (gflops * 1e9)
    res["floor"] = {
        "tokens": tokens,
        "padded_tokens": res["b"]["padded_tokens"],
        "flops_per_token": flops_per_token(avg_len),
        "matmul_gflops": gflops,
        "seconds": floor,
    }
    a = res["a"]["seconds"]
    print()
    print(f"{'step':<40}{'seconds':>9}{'vs (a)':>9}{'target':>9}{'floor/time':>12}{'peak RSS MB':>13}")
    rows = [
        ("a", "(a) sentence-transformers encode"),
        ("b", "(b) evalsuite run, cold"),
        ("c", "(c) sweep 3 poolings x 4 dims, cold"),
        ("d", "(d) same sweep, warm, in process"),
        ("v", "(v) same sweep, warm vectors, process"),
        ("w", "(w) same sweep, warm, whole process"),
    ]
    for key, label in rows:
        s = res[key]["seconds"]
        target = f"<={TARGETS[key]}" if key in TARGETS else ""
        frac = f"{floor / s:.0%}" if key in ("a", "b", "c") else ""
        print(f"{label:<40}{s:>9.2f}{s / a:>9.3f}{target:>9}{frac:>12}{res[key]['peak_rss_mb']:>13.0f}")
    print(
        f"(e) floor: {tokens} tokens x {flops_per_token(avg_len) / 1e6:.1f} MFLOP/token / {gflops:.1f} GFLOP/s "
        f"= {floor:.1f} s"
    )
    print(f"(f) peak memory (c)/(b) = {res['c']['peak_rss_mb'] / res['b']['peak_rss_mb']:.2f} (target <= 1.5)")
    print(
        f"(c) forward passes {res['c']['passes_by_role']}, texts encoded {res['c']['texts_encoded']}; "
        f"(d) texts encoded {res['d']['texts_encoded']}, models loaded {res['d']['models_loaded']}; "
        f"(v) imported {', '.join(res['v']['imported']) or 'none of ' + ', '.join(HEAVY)}; "
        f"(w) imported {', '.join(res['w']['imported']) or 'none of ' + ', '.join(HEAVY)}"
    )
    print(f"(w) {res['w']['result_cache']}")
    verdicts = {k: res[k]["seconds"] / a <= t for k, t in TARGETS.items()}
    verdicts["mem"] = res["c"]["peak_rss_mb"] <= 1.5 * res["b"]["peak_rss_mb"]
    print("targets: " + ", ".join(f"{k} {'met' if ok else 'MISSED'}" for k, ok in verdicts.items()))


if __name__ == "__main__":
    sys.exit(main())
