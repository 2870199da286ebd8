"""Shared test fixtures: a tiny random-weight BERT, the bundled model and the fixture dataset.

Nothing here imports torch or transformers at collection time.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evalsuite.testing.lifetimes import Lifetimes
from evalsuite.testing.threads import share_cores
from evalsuite.testing.tiny_bert import write_tiny_bert

# Under xdist each worker, and each server it starts, gets its share of the cores (evalsuite/testing/threads.py).
share_cores(os.environ)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# Tests never append their gated sessions' verdict summaries to the CI job's own step summary (docs/history.md).
os.environ.pop("GITHUB_STEP_SUMMARY", None)
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


# small_beir with documents and queries of other topics (canary, load): the first two, or all three (a long one)
EXTRA_CORPUS = [
    {"_id": "d7", "title": "Space", "text": "The moon orbits the planet and reflects the light of the sun."},
    {"_id": "d8", "title": "", "text": "A network router forwards each packet along the protocol's route."},
    {"_id": "d9", "title": "Long", "text": " ".join(["the garden soil feeds each seed and root of the plant"] * 12)},
]
EXTRA_QUERIES = [
    {"_id": "q4", "text": "what does the moon orbit"},
    {"_id": "q5", "text": "what does a router do with a packet"},
    {"_id": "q6", "text": "what feeds the seed and root of a plant in the garden"},
]
EXTENDED_QRELS = [("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d3", 2), ("q2", "d4", 1), ("q3", "d5", 2), ("q3", "d6", 1)]


@pytest.fixture(scope="session")
def extended_beir(tmp_path_factory: pytest.TempPathFactory):
    """``extended_beir(n)``: small_beir's corpus and queries (without its q4) plus the first ``n`` (2 or 3) extra
    topics, one relevant document each; each n written once per session."""
    made: dict[int, Path] = {}

    def build(n: int) -> Path:
        if n not in made:
            queries = [q for q in SMALL_QUERIES if q["_id"] != "q4"] + EXTRA_QUERIES[:n]
            qrels = EXTENDED_QRELS + [
                (q["_id"], d["_id"], 2) for q, d in zip(EXTRA_QUERIES[:n], EXTRA_CORPUS[:n], strict=True)
            ]
            made[n] = write_beir(
                tmp_path_factory.mktemp(f"extended-{n}"), SMALL_CORPUS + EXTRA_CORPUS[:n], queries, qrels
            )
        return made[n]

    return build


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

    from evalsuite.scoring.metrics import evaluate

    evaluate({"q": {"d": 1}}, {"q": {"d": 1.0, "e": 0.5}}, ["ndcg@10", "recall@10", "recall@100", "mrr@10"])


# -- real serving engines (infinity-emb, vLLM), one launcher for every suite that starts them -----------
@dataclass(frozen=True)
class Engine:
    """A serving engine in its own venv, started through ``.ci/<name>.sh serve VENV MODEL PORT [extra]``."""

    name: str
    venv: Path
    executable: str  # in the venv's bin/ (or ``installed``): its presence means "installed"
    startup_s: float  # from spawn to the first 200 on ``ready_path``
    stop_s: float
    ready_path: str = "/health"  # at the server root; llama-cpp-python has no health route
    ready_status: frozenset[int] = frozenset({200})  # 401 too where ready_path needs the API key
    installed: str | None = None  # a path in the venv whose presence means "installed" (default bin/executable)

    @property
    def marker(self) -> Path:
        return self.venv / (self.installed or f"bin/{self.executable}")

    @property
    def script(self) -> Path:
        return REPO / ".ci" / f"{self.name}.sh"

    @property
    def install_command(self) -> str:
        return f"bash .ci/{self.name}.sh install {self.venv.relative_to(REPO)}"


INFINITY = Engine("infinity", REPO / ".infinity-venv", "infinity_emb", startup_s=180.0, stop_s=15.0)
# A vLLM start takes minutes on 2 shared cores (see docs/engines.md, "Running vLLM on CPU").
VLLM = Engine("vllm", REPO / ".vllm-venv", "vllm", startup_s=900.0, stop_s=30.0)
# llama-cpp-python: the last thing its install writes is the f16 GGUF; no /health, so readiness is /v1/models.
LLAMACPP = Engine(
    "llamacpp",
    REPO / ".llamacpp-venv",
    "python",
    startup_s=120.0,
    stop_s=15.0,
    ready_path="/v1/models",
    ready_status=frozenset({200, 401}),  # the model is loaded before the server listens
    installed="models/minilm-f16.gguf",
)


def _die_with_parent() -> None:
    """In the server's process before exec: SIGTERM when the test process that started it dies, so a test run
    that is killed (no session teardown) leaves no server behind (Linux; elsewhere teardown alone stops it)."""
    if sys.platform == "linux":
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServedEngine:
    """One engine process on loopback (its own process group), its log in a file."""

    def __init__(self, engine: Engine, model_dir: Path, log: Path, extra: list[str]) -> None:
        self.engine = engine
        self.port = _free_port()
        self.log = log
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.started = time.monotonic()
        self.ready_s: float | None = None
        self._fh = open(log, "wb")  # noqa: SIM115 - held open for the server process's lifetime
        self.proc = subprocess.Popen(
            ["bash", str(engine.script), "serve", str(engine.venv), str(model_dir), str(self.port), *extra],
            stdout=self._fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )

    def wait_ready(self, deadline: float) -> None:
        import httpx

        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.engine.name} exited with {self.proc.returncode}: {self.tail()}")
            try:
                answer = httpx.get(f"http://127.0.0.1:{self.port}{self.engine.ready_path}", timeout=2)
                if answer.status_code in self.engine.ready_status:
                    self.ready_s = time.monotonic() - self.started
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(
            f"{self.engine.name} did not answer {self.engine.ready_path} within {self.engine.startup_s:.0f}s: {self.tail()}"
        )

    def tail(self) -> str:
        self._fh.flush()
        return self.log.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        # the whole process group: vLLM runs its engine core in a child process
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.engine.stop_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # children left behind by a clean exit
        self._fh.close()


Launcher = Callable[..., dict[str, ServedEngine]]  # start(purpose, {name: (model_dir, extra)}, *, fresh=False)


def _await_engine_install(engine: Engine) -> None:
    """An engine venv still installing in the background (`scripts/bootstrap.sh --test --no-wait`, as `.ci/run`
    does) is waited for; a failed install skips the test with its log's tail, or fails it under CI."""
    from evalsuite.testing.engine_install import STATE_DIR, InstallFailed, await_install

    try:
        await_install(REPO / STATE_DIR, engine.name)  # InstallTimeout fails the test: waiting longer is no skip
    except InstallFailed as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def _launch(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    """``start(purpose, {name: (model_dir, extra args)})``: real servers started together and waited for; a
    configuration (model directory and arguments) already running in this test process is handed out again rather
    than started twice (``fresh=True``: a second instance, e.g. the other member of a fleet); every server is stopped at the end of the session. Without the engine's venv the test is skipped with
    the command that installs it, or fails under CI (which must run the tests against real servers)."""
    started: list[ServedEngine] = []
    running: dict[tuple[str, tuple[str, ...]], ServedEngine] = {}  # one server per configuration in this process

    def start(
        purpose: str, servers: dict[str, tuple[Path, list[str]]], *, fresh: bool = False
    ) -> dict[str, ServedEngine]:
        _await_engine_install(engine)
        if not engine.marker.exists():
            reason = f"{engine.name} venv not found at {engine.venv}; install it with `{engine.install_command}`"
            if os.environ.get("CI"):
                pytest.fail(f"{reason} (CI must run the {engine.name} {purpose} tests)")
            pytest.skip(reason)
        root = tmp_path_factory.mktemp(f"{engine.name}-{purpose}")
        made: dict[str, ServedEngine] = {}
        for name, (d, extra) in servers.items():
            key = (str(Path(d).resolve()), tuple(extra))
            same = running.get(key)  # a server of the same model and arguments, still up: shared, not started again
            if fresh or same is None or same.proc.poll() is not None:
                same = running[key] = ServedEngine(engine, d, root / f"{name}.log", extra)
                started.append(same)
            made[name] = same
        deadline = time.monotonic() + engine.startup_s
        for s in made.values():
            if s.ready_s is None:
                s.wait_ready(deadline)
        return made

    try:
        yield start
    finally:
        for s in started:
            s.stop()


# The launchers set up in this test process end where the tests that need them end, not with the session
# (evalsuite.testing.lifetimes): six vLLM servers held to the end beside the other groups' outgrow CI's 24 GiB.
LIFETIMES = Lifetimes()


@pytest.fixture(scope="session")
def infinity_launcher(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Launcher]:
    """Real infinity-emb servers (see ``_launch``)."""
    LIFETIMES.hold(request)
    yield from _launch(INFINITY, tmp_path_factory)


@pytest.fixture(scope="session")
def vllm_launcher(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Launcher]:
    """Real vLLM (CPU build) servers (see ``_launch``); tests/vllm/conftest.py starts each configuration once."""
    LIFETIMES.hold(request)
    yield from _launch(VLLM, tmp_path_factory)


@pytest.fixture(scope="session")
def llamacpp_launcher(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Launcher]:
    """Real llama-cpp-python servers (see ``_launch``); the "model" of each is a GGUF file (tests/llamacpp)."""
    LIFETIMES.hold(request)
    yield from _launch(LLAMACPP, tmp_path_factory)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a test's own teardown: the launchers the next test (in another xdist group) does not need are ended."""
    result = yield
    LIFETIMES.after(item, nextitem)
    return result


@pytest.fixture(scope="session")
def reference_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache for the whole test process: the reference is encoded once per contract and text, whatever
    module asks (the cache is keyed by everything that changes a vector, so sharing it changes no result)."""
    return tmp_path_factory.mktemp("reference-cache")


# -- the session's real infinity-emb embedding servers: every test that uses them is in xdist_group("infinity") --
def _cls_copy(model_dir: Path, dest: Path) -> Path:
    shutil.copytree(model_dir, dest)
    cfg_path = dest / "1_Pooling" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.update(pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
    cfg_path.write_text(json.dumps(cfg, indent=2))
    return dest


@pytest.fixture(scope="session")
def infinity_servers(bundled_model_dir, tmp_path_factory, infinity_launcher):
    """Two real infinity-emb servers, started together once per session: the bundled model behind
    an API key ("good") and a copy whose pooling config says CLS ("cls", a broken deployment)."""
    import secrets

    key = "sk-infinity-" + secrets.token_hex(12)
    cls_dir = _cls_copy(Path(bundled_model_dir), tmp_path_factory.mktemp("infinity-cls") / "cls-model")
    servers = infinity_launcher("canary", {"good": (Path(bundled_model_dir), ["--api-key", key]), "cls": (cls_dir, [])})
    return {"good": servers["good"], "cls": servers["cls"], "key": key}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--vllm-full",
        action="store_true",
        help="also run the vllm_full tier (vLLM configurations of their own, xdist group vllm-full; .ci/run)",
    )


@pytest.hookimpl(trylast=True)  # after pytest-xdist's worker has marked each grouped test's id
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Grouped tests really are grouped; the ``vllm_full`` tier (vLLM configurations beyond the README command's
    time budget) runs only when ``-m`` names it or ``--vllm-full`` is given."""
    _check_xdist_groups(config, items)
    if "vllm_full" in (config.option.markexpr or "") or config.getoption("vllm_full"):
        return
    skip = pytest.mark.skip(reason="vLLM full tier: run with `pytest -m vllm_full tests/vllm`")
    for item in items:
        if item.get_closest_marker("vllm_full"):
            item.add_marker(skip)


_LOST_GROUP = pytest.StashKey[str]()


def _check_xdist_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` pytest-xdist sends the tests of one ``xdist_group`` to one worker by writing
    the group into each test's id; a pytest that keeps the id elsewhere (9.2) silently spreads them, and every
    worker then starts its own Infinity and vLLM servers. Such tests fail at set-up, before any server starts,
    with the fix (see ``pytest_runtest_setup``)."""
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers under --dist loadgroup
        return
    lost = [item for item in items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    for item in lost:
        item.stash[_LOST_GROUP] = (
            f"pytest {pytest.__version__} lost the xdist group of {len(lost)} test(s) under --dist loadgroup: "
            "each worker would start its own servers. Install the pytest evalsuite's test extra pins: "
            "pip install -e '.[test]'"
        )


@pytest.hookimpl(tryfirst=True)  # before any fixture (a server) is set up
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _LOST_GROUP in item.stash:
        pytest.fail(item.stash[_LOST_GROUP], pytrace=False)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A two-node Ray cluster for the session (tests that use it are in ``xdist_group("ray")``); this process is
    its driver. Without Ray installed the test is skipped, or fails under CI."""
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("ray is not installed (CI must run the Ray cluster tests): pip install -e '.[test]'")
        pytest.skip("ray is not installed: pip install 'evalsuite[ray]'")
    from evalsuite.testing.ray_cluster import RayCluster

    cluster = RayCluster(Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp")))  # short: Ray's socket paths are limited
    try:
        cluster.start_head()
        cluster.add_node("second")
        yield cluster
    finally:
        cluster.stop()
