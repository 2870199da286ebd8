"""Shared test fixtures: a tiny random-weight BERT, the bundled model and the fixture dataset.

Nothing here imports torch or transformers at collection time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evalsuite.tiny_bert import write_tiny_bert

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# Tests never touch the user's embedding cache.
os.environ.setdefault("EVALSUITE_CACHE_DIR", tempfile.mkdtemp(prefix="evalsuite-test-cache-"))

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent
FIXTURE_DATASET = REPO / "fixtures" / "minibeir"


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-transformers-layout random BERT (hidden 32, mean pooling, max_seq_length 64)."""
    return write_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def bundled_model_dir() -> Path:
    from evalsuite.model import bundled_model_dir as locate

    return locate()


@pytest.fixture(scope="session")
def minibeir_dir() -> Path:
    return FIXTURE_DATASET


def write_beir(
    root: Path, corpus: list[dict], queries: list[dict], qrels: list[tuple[str, str, int]], split: str = "test"
) -> Path:
    """Write a small BEIR-layout dataset (for tests that need their own data)."""
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / f"{split}.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in qrels)
    )
    return root


SMALL_CORPUS = [
    {"_id": "d1", "title": "Databases", "text": "A transaction commit makes every write durable."},
    {"_id": "d2", "title": "", "text": "Rollback undoes the writes of a failed transaction."},
    {"_id": "d3", "title": "Baking", "text": "Yeast makes bread dough rise in a warm oven."},
    {"_id": "d4", "title": "", "text": "Flour, water and sugar are mixed before you bake."},
    {"_id": "d5", "title": "Basketball", "text": "A team scores when the ball goes through the basket."},
    {"_id": "d6", "title": "", "text": "The star player read the rule book of the court."},
]
SMALL_QUERIES = [
    {"_id": "q1", "text": "how does a database commit a transaction"},
    {"_id": "q2", "text": "why does bread dough rise"},
    {"_id": "q3", "text": "how does a basketball team score"},
    {"_id": "q4", "text": "planet orbit around the sun"},
]
SMALL_QRELS = [("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d3", 2), ("q3", "d5", 2), ("q3", "d6", 0), ("q4", "d1", 0)]


@pytest.fixture(scope="session")
def small_beir_records() -> tuple[list[dict], list[dict], list[tuple[str, str, int]]]:
    """Corpus, queries and qrels of ``small_beir``, for tests that extend them."""
    return [dict(d) for d in SMALL_CORPUS], [dict(q) for q in SMALL_QUERIES], list(SMALL_QRELS)


@pytest.fixture
def small_beir(tmp_path: Path) -> Path:
    """Six documents over three topics, four queries (one without a relevant document)."""
    return write_beir(tmp_path / "small", SMALL_CORPUS, SMALL_QUERIES, SMALL_QRELS)


@pytest.fixture(scope="session")
def make_beir():
    """The ``write_beir`` helper, for tests that build their own dataset."""
    return write_beir


@pytest.fixture(scope="session")
def make_tiny_bert():
    """The ``write_tiny_bert`` helper, for tests that need a variant of the tiny model."""
    return write_tiny_bert


@pytest.fixture(scope="session")
def bundled_model_loaded(model_stack_loaded):
    """Load the real model once in this process before in-process pytester runs use it: a module its
    loading imports for the first time inside a run is dropped afterwards, and torch crashes when the
    next run imports it again (TORCH_LIBRARY registered twice)."""
    from evalsuite.encode.local import LocalEncoder
    from evalsuite.model import resolve_model

    LocalEncoder(resolve_model(None), device="cpu", max_length=16).encode(["warm up"], poolings=["mean"])


@pytest.fixture(scope="session")
def model_stack_loaded():
    """Import the model stack and load ranx's kernels in this process, before in-process pytester runs.

    In-process pytester runs restore ``sys.modules`` afterwards; torch imported for the first time inside
    a run would be imported again by the next one, which crashes the process.
    """
    import faiss  # noqa: F401
    import torch  # noqa: F401
    import transformers  # noqa: F401

    from evalsuite.metrics import evaluate

    evaluate({"q": {"d": 1}}, {"q": {"d": 1.0, "e": 0.5}}, ["ndcg@10", "recall@10", "recall@100", "mrr@10"])


# -- real infinity-emb servers, one launcher for every suite that starts them --------------------------
INFINITY_VENV = REPO / ".infinity-venv"
INFINITY_SCRIPT = REPO / ".ci" / "infinity.sh"
INFINITY_STARTUP_S = 180.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class InfinityServer:
    """One `infinity_emb v2` process on loopback (through `.ci/infinity.sh serve`), its log in a file."""

    def __init__(self, model_dir: Path, log: Path, extra: list[str]) -> None:
        self.port = _free_port()
        self.log = log
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._fh = open(log, "wb")  # noqa: SIM115 - held open for the server process's lifetime
        self.proc = subprocess.Popen(
            ["bash", str(INFINITY_SCRIPT), "serve", str(INFINITY_VENV), str(model_dir), str(self.port), *extra],
            stdout=self._fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, deadline: float) -> None:
        import httpx

        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"infinity exited with {self.proc.returncode}: {self.tail()}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"infinity did not answer /health within {INFINITY_STARTUP_S:.0f}s: {self.tail()}")

    def tail(self) -> str:
        self._fh.flush()
        return self.log.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self._fh.close()


InfinityLauncher = Callable[[str, dict[str, tuple[Path, list[str]]]], dict[str, InfinityServer]]


@pytest.fixture(scope="session")
def infinity_launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InfinityLauncher]:
    """``start(purpose, {name: (model_dir, extra args)})``: real servers started together and waited for;
    every server is stopped at the end of the session. Without the infinity venv the test is skipped,
    or fails under CI (which must run the tests against real servers)."""
    started: list[InfinityServer] = []

    def start(purpose: str, servers: dict[str, tuple[Path, list[str]]]) -> dict[str, InfinityServer]:
        if not (INFINITY_VENV / "bin" / "infinity_emb").exists():
            reason = (
                f"infinity-emb venv not found at {INFINITY_VENV}; install it with "
                "`bash .ci/infinity.sh install .infinity-venv`"
            )
            if os.environ.get("CI"):
                pytest.fail(f"{reason} (CI must run the infinity {purpose} tests)")
            pytest.skip(reason)
        root = tmp_path_factory.mktemp(f"infinity-{purpose}")
        made = {name: InfinityServer(d, root / f"{name}.log", extra) for name, (d, extra) in servers.items()}
        started.extend(made.values())
        deadline = time.monotonic() + INFINITY_STARTUP_S
        for s in made.values():
            s.wait_ready(deadline)
        return made

    try:
        yield start
    finally:
        for s in started:
            s.stop()
