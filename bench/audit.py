"""Benchmark: `evalsuite audit`'s structure and fidelity checks over a large FAISS file, in bounded memory, beside
the floor of reading the index and one exact search pass of the queries (a script, not a test).

    .venv/bin/python bench/audit.py [--rows 1000000] [--dim 384] [--queries 100] [--workdir DIR] [--repeat 1]

Writes a synthetic corpus of ``rows`` short chunks (BEIR layout), an IndexFlatIP of ``rows`` x ``dim`` unit vectors
with a one-id-per-line sidecar, then measures, each in its own process (so each peak RSS is its own):

- ``index`` (once, when the corpus has no kept index yet): the dataset opened the first time, its corpus indexed
  and the index kept in ``WORKDIR/cache`` (what the first audit of a new dataset pays; printed, not in the ratio);
- ``floor``: ``faiss.read_index`` memory-mapped, then one exact search of ``queries`` query vectors (top 10);
- ``audit``: the index opened as ``evalsuite audit`` opens it (the dataset's kept index reused), the model load and
  the sample's encode started in the background (``AuditContext.prefetch``, as ``run_audit`` does), and the checks
  ``shape``, ``ids``, ``norms`` (every stored vector, streamed with ``reconstruct_n`` in blocks), ``collisions``
  (rows stored with one vector, from the same pass) and ``fidelity``
  (the seeded sample that finds a 1% bad share with probability 0.99, its chunks' texts encoded by the bundled
  reference model).

The vectors are random except the sampled rows, which hold their chunks' reference vectors (so the fidelity check
passes and its diagnosis does not run: what is timed is the audit of a faithful index). Prints wall time, CPU time
(user + system, every thread) and peak RSS of the phases side by side (with ``--repeat N``, floor and audit
alternate N times and the fastest of each is kept), and last ``ratio audit/floor X.XX`` (wall times).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BLOCK = 65536


def _text(i: int) -> str:
    return f"chunk {i}: notes on topic {i % 997} and item {i * 7919 % 100003}, part {i % 13}"


def build(work: Path, rows: int, dim: int, queries: int) -> None:
    import faiss
    import numpy as np

    from evalsuite.audit.checks import DETECT_CONFIDENCE
    from evalsuite.audit.scan import sample_rows, sample_size

    ds = work / "dataset"
    (ds / "qrels").mkdir(parents=True, exist_ok=True)
    with (ds / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for i in range(rows):
            f.write(json.dumps({"_id": f"c{i:07d}", "title": "", "text": _text(i)}) + "\n")
    (ds / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{j}", "text": f"topic {j}"}) + "\n" for j in range(queries))
    )
    (ds / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{j}\tc{j:07d}\t1\n" for j in range(queries))
    )
    (work / "ids.txt").write_text("".join(f"c{i:07d}\n" for i in range(rows)))
    sample = sample_rows(rows, sample_size(0.01, DETECT_CONFIDENCE, rows), 0)
    ref = _reference(ds, [_text(int(i)) for i in sample])
    index = faiss.IndexFlatIP(dim)
    rng = np.random.default_rng(0)
    for start in range(0, rows, BLOCK):
        n = min(BLOCK, rows - start)
        x = rng.standard_normal((n, dim), dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        inside = (sample >= start) & (sample < start + n)
        x[sample[inside] - start] = ref[inside]
        index.add(x)
    faiss.write_index(index, str(work / "index.faiss"))
    np.save(work / "queries.npy", rng.standard_normal((queries, dim), dtype=np.float32))


def _prepared(ds: Path):  # type: ignore[no-untyped-def]
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    spec = {"dataset": str(ds), "chunk_size": BLOCK, "use_cache": False, "cache_dir": str(ds.parent / "cache")}
    return prepare(RunSpec.from_mapping(spec, source="bench"))


def _reference(ds: Path, texts: list[str]):  # type: ignore[no-untyped-def]
    from evalsuite.encode.contract_encoder import ContractEncoder
    from evalsuite.run.pipeline import make_encoder

    p = _prepared(ds)
    return ContractEncoder(make_encoder(p), p.contract).embed_documents(texts)


def phase_floor(work: Path) -> dict[str, float]:
    import faiss
    import numpy as np

    t = time.perf_counter()
    index = faiss.read_index(str(work / "index.faiss"), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
    index.search(np.load(work / "queries.npy"), 10)
    return {"seconds": time.perf_counter() - t}


def phase_index(work: Path) -> dict[str, float]:
    t = time.perf_counter()
    _prepared(work / "dataset")
    return {"seconds": time.perf_counter() - t}


def phase_audit(work: Path) -> dict[str, object]:
    from evalsuite.audit.checks import COLLISIONS, FIDELITY, IDS, NORMS, SHAPE
    from evalsuite.audit.runner import AuditTarget, open_context, reference_encoder
    from evalsuite.audit.settings import AuditSettings
    from evalsuite.audit.source import SourceOptions
    from evalsuite.checks import judge

    t = time.perf_counter()
    prepared = _prepared(work / "dataset")
    target = AuditTarget(f"faiss:{work / 'index.faiss'}", SourceOptions(ids_path=work / "ids.txt"))
    ctx = open_context(target, AuditSettings(), prepared, reference_encoder(prepared))
    ctx.prefetch()
    out: dict[str, object] = {"open_seconds": round(time.perf_counter() - t, 1)}
    for check in (SHAPE, IDS, NORMS, COLLISIONS, FIDELITY):
        t0 = time.perf_counter()
        v = judge(check, ctx)
        out[check.name] = v.status
        out[f"{check.name}_seconds"] = round(time.perf_counter() - t0, 1)
        print(f"  {v.status}  {v.message[:160]}", file=sys.stderr)
    ctx.close()
    out["seconds"] = time.perf_counter() - t
    return out


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_mib() -> float:
    """This process's peak resident set (VmHWM: mapped file pages it touched included). Not ``ru_maxrss``: Linux
    carries a parent's peak into a child through fork and exec, so a child would report the builder's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=1, help="alternate floor and audit this many times, keep the fastest")
    ap.add_argument("--phase", choices=("index", "floor", "audit"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        phases = {"index": phase_index, "floor": phase_floor, "audit": phase_audit}
        result = phases[args.phase](args.workdir)
        result["peak_rss_mib"] = _peak_rss_mib()
        result["cpu_seconds"] = _cpu_seconds()
        print(json.dumps(result))
        return 0
    work = args.workdir or Path(tempfile.mkdtemp(prefix="evalsuite-audit-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "index.faiss").exists():
        t = time.perf_counter()
        build(work, args.rows, args.dim, args.queries)
        print(f"built {args.rows} x {args.dim} in {time.perf_counter() - t:.1f} s: {work}", file=sys.stderr)
    size = (work / "index.faiss").stat().st_size / 2**20
    results: dict[str, dict[str, object]] = {}
    first = () if (work / "cache" / "corpus-index").is_dir() else ("index",)
    for phase in (*first, *("floor", "audit") * max(1, args.repeat)):
        proc = subprocess.run(
            [sys.executable, __file__, "--phase", phase, "--workdir", str(work)],
            capture_output=True,
            text=True,
            check=False,
        )
        sys.stderr.write(proc.stderr[-3000:])
        if proc.returncode:
            return proc.returncode
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"  {phase}: {got['seconds']:.1f} s, CPU {got['cpu_seconds']:.1f} s", file=sys.stderr)
        if phase not in results or got["seconds"] < results[phase]["seconds"]:
            results[phase] = got
    print(f"index: {args.rows} x {args.dim} float32, {size:.0f} MiB on disk")
    print(f"{'phase':<8} {'seconds':>8} {'CPU s':>8} {'peak RSS MiB':>13}")
    for phase, r in results.items():
        print(f"{phase:<8} {r['seconds']:>8.1f} {r['cpu_seconds']:>8.1f} {r['peak_rss_mib']:>13.0f}")
    print(
        "audit steps: "
        + ", ".join(
            f"{k} {v}" for k, v in results["audit"].items() if k not in ("seconds", "peak_rss_mib", "cpu_seconds")
        )
    )
    audit, floor = results["audit"], results["floor"]
    print(f"CPU audit/floor {float(audit['cpu_seconds']) / float(floor['cpu_seconds']):.2f}")
    print(f"ratio audit/floor {float(audit['seconds']) / float(floor['seconds']):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
