"""The default path's memory: ``evalsuite run`` with default flags against ``--chunk-size 0`` (a part of
``bench_scale.py``, run as ``bench_scale.py --default-path``).

For each synthetic BEIR corpus (the texts of ``bench_scale.write_dataset``; ``--doc-words`` stretches each
document to about that many words, truncated to the tiny model's 64 tokens; ``--pad-kib`` adds to every record
a list field of that many KiB, which the reader parses and leaves out, so a corpus of a few hundred documents
crosses the automatic chunking threshold: a quick check of the decision, the tests' use, where peak RSS
measures little else), two child processes run the real command line,
``python -m evalsuite run``, with the tiny random BERT (hidden 32) and a fresh embedding cache each:

- ``default``: no ``--chunk-size``: evalsuite decides (``prepared.decide_chunking``: chunks of
  ``spec.AUTO_CHUNK_SIZE`` into an on-disk store when the corpus file is >= ``spec.AUTO_CHUNK_BYTES``);
- ``in-memory``: ``--chunk-size 0``: every text and vector in memory, one exact search.

Each child's peak RSS is its own (``os.wait4`` returns that child's ``ru_maxrss``), its wall time is spawn
to exit, and whether it chunked is what it said on stderr (the note ``decide_chunking`` prints). The
two runs of a corpus must give the same metrics (the chunked path ranks exactly as the in-memory one).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
AUTO_NOTE = "the corpus is large"  # the start of decide_chunking's note on stderr
RUNS = {"default": (), "in-memory": ("--chunk-size", "0")}
DIM = 32  # the tiny model's hidden size


@dataclass(frozen=True)
class Measured:
    """One child process: ``evalsuite run`` over one corpus with one set of flags."""

    documents: int
    doc_words: int  # about this many words a document (0: 12-48)
    pad_kib: int  # each record's skipped padding (0: none)
    corpus_mib: float  # the corpus file's size, what decide_chunking looks at
    run: str  # "default" or "in-memory"
    flags: str
    chunked: bool  # the run chose (or was told) the chunked, on-disk path
    peak_rss_mb: float
    wall_seconds: float
    vectors_mb: float  # documents x 32 x 4 bytes
    metrics: dict[str, float]


def write_long_dataset(root: Path, size: int, queries: int, words: list[str], doc_words: int, pad_kib: int = 0) -> Path:
    """``bench_scale.write_dataset``'s corpus with each text repeated to about ``doc_words`` words (0: as is) and
    each record padded with a ``pad_kib`` KiB list field (0: none)."""
    pad = {"padding": ["x" * (pad_kib * 1024 - 16)]} if pad_kib else {}
    from synthetic import doc_text, synthetic_queries

    (root / "qrels").mkdir(parents=True, exist_ok=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for i in range(size):
            text = doc_text(i, words)
            if doc_words:
                n = len(text.split())
                text = " ".join([text] * max(1, round(doc_words / n)))
            fh.write(json.dumps({"_id": f"d{i}", "title": "", "text": text, **pad}) + "\n")
    qids, qtexts, targets = synthetic_queries(size, queries, words)
    with open(root / "queries.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"_id": q, "text": t}) + "\n" for q, t in zip(qids, qtexts, strict=True))
    with open(root / "qrels" / "test.tsv", "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        fh.writelines(f"{q}\td{t}\t1\n" for q, t in zip(qids, targets, strict=True))
    return root


def measure(dataset: Path, shape: tuple[int, int, int], model_dir: Path, run: str, scratch: Path) -> Measured:
    """Run ``evalsuite run`` on ``dataset`` (``shape``: documents, words a document, padding KiB) in a child
    process and read its peak RSS, time and decision."""
    size, doc_words, pad_kib = shape
    out = Path(tempfile.mkdtemp(prefix=f"{run}-", dir=scratch))
    flags = RUNS[run]
    cmd = [
        sys.executable,
        "-m",
        "evalsuite",
        "run",
        "--model",
        str(model_dir),
        "--dataset",
        str(dataset),
        "--device",
        "cpu",
        "--cache-dir",
        str(out / "cache"),  # a fresh cache: every vector encoded, none read back
        "--store-dir",
        str(out / "store"),
        "--out",
        str(out / "report"),
        *flags,
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    t0 = time.perf_counter()
    with open(out / "stdout", "w") as so, open(out / "stderr", "w") as se:
        proc = subprocess.Popen(cmd, stdout=so, stderr=se, env=env, cwd=out)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = (out / "stderr").read_text()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{stderr[-3000:]}")
    results = json.loads((out / "report" / "results.json").read_text())
    return Measured(
        documents=size,
        doc_words=doc_words,
        pad_kib=pad_kib,
        corpus_mib=round((dataset / "corpus.jsonl").stat().st_size / 2**20, 1),
        run=run,
        flags=" ".join(flags) or "(none)",
        chunked=AUTO_NOTE in stderr,  # --chunk-size 0 never chunks and prints no note
        peak_rss_mb=round(usage.ru_maxrss / 1024, 1),  # Linux: KiB
        wall_seconds=round(wall, 1),
        vectors_mb=round(size * DIM * 4 / 2**20, 1),
        metrics=results["metrics"],
    )


def run_default_path(
    sizes: list[int], queries: int, doc_words: list[int], scratch: Path, pad_kib: list[int]
) -> list[Measured]:
    """Both runs of every corpus (``sizes[i]`` documents of about ``doc_words[i]`` words, records padded by
    ``pad_kib[i]`` KiB), in the order given."""
    from synthetic import vocabulary

    from evalsuite.testing.tiny_bert import write_tiny_bert

    model_dir = write_tiny_bert(scratch / "tiny")
    rows = []
    for size, words, pad in zip(sizes, doc_words, pad_kib, strict=True):
        dataset = write_long_dataset(scratch / f"beir-{size}-{words}-{pad}", size, queries, vocabulary(), words, pad)
        for run in RUNS:
            m = measure(dataset, (size, words, pad), model_dir, run, scratch)
            print(
                f"{m.documents:>8} docs {m.corpus_mib:>7.1f} MiB  {m.run:>9}: chunked {m.chunked!s:5}  "
                f"peak RSS {m.peak_rss_mb:7.1f} MB  wall {m.wall_seconds:6.1f} s",
                flush=True,
            )
            rows.append(m)
    return rows


def table(rows: list[Measured]) -> list[str]:
    """The Markdown table: one line per corpus, the two runs side by side and their RSS ratio."""
    lines = [
        "| documents | corpus | vectors | default: chunked | default: peak RSS | default: wall | "
        "--chunk-size 0: peak RSS | --chunk-size 0: wall | RSS default / in memory | same metrics |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    by = {(r.documents, r.corpus_mib, r.run): r for r in rows}
    for (docs, mib, run), d in by.items():
        if run != "default":
            continue
        m = by[(docs, mib, "in-memory")]
        lines.append(
            f"| {docs:,} | {mib:,.1f} MiB | {d.vectors_mb:,.1f} MB | {'yes' if d.chunked else 'no'} | "
            f"{d.peak_rss_mb:,.0f} MB | {d.wall_seconds:.1f} s | {m.peak_rss_mb:,.0f} MB | {m.wall_seconds:.1f} s | "
            f"{d.peak_rss_mb / m.peak_rss_mb:.2f} | {'yes' if d.metrics == m.metrics else 'NO'} |"
        )
    return lines


def slopes(rows: list[Measured]) -> list[str]:
    """Per run, the peak RSS growth per 100k documents between consecutive corpora of the same shape (words a
    document, padding) that ran the same path."""
    out = []
    for run, shape in sorted({(r.run, (r.doc_words, r.pad_kib)) for r in rows}):
        mine = sorted(
            (r for r in rows if r.run == run and (r.doc_words, r.pad_kib) == shape), key=lambda r: r.documents
        )
        for a, b in itertools.pairwise(mine):
            if a.chunked == b.chunked and b.documents > a.documents:
                per = (b.peak_rss_mb - a.peak_rss_mb) / ((b.documents - a.documents) / 1e5)
                out.append(
                    f"{run} ({'chunked' if a.chunked else 'in memory'}) {a.documents:,} -> {b.documents:,} "
                    f"documents: {per:.1f} MB peak RSS per 100k documents (vectors: {DIM * 4 * 1e5 / 2**20:.1f} MB)"
                )
    return out


def to_json(rows: list[Measured]) -> list[dict[str, object]]:
    return [asdict(r) for r in rows]
