"""Option definitions shared by the `evalsuite` CLI and the pytest plugin, so the two cannot drift.

Each option is declared once with a parser that rejects bad values at parse time. The parsed
default is ``None`` (the spec file or the model's own declaration fills what the user did not
say); the help text shows the real default, read from the dataclass that owns it.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..base.errors import SpecError
from ..base.options import Option as Option
from ..base.options import add_options as add_declared
from ..base.options import collect as collect_declared
from ..base.options import render_default as render_default
from ..contract import DTYPES, POOLINGS, SIMILARITIES, TRUNCATIONS
from ..datasets.model import EMPTY_POLICIES
from ..encode.executors import EXECUTORS
from ..encode.response import ENCODING_FORMATS
from ..retrieval.index.spec import canonical as canonical_index
from ..scoring.metrics import parse_metrics
from .spec import AUTO_CHUNK_BYTES, AUTO_CHUNK_SIZE, RunSpec

T = TypeVar("T")


def int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is too small; it must be >= {minimum}")
        return value

    parse.__name__ = f"integer>={minimum}"
    return parse


def spec_type(parse: Callable[[str], T], name: str) -> Callable[[str], T]:
    """An argparse ``type`` from a parser that raises SpecError: the message becomes argparse's."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except SpecError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name
    return convert


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def url(text: str) -> str:
    from ..encode.endpoint import base_url

    return base_url(text)


def env_name(text: str) -> str:
    # Never echo the value: a user who passes the key itself here must not see it printed.
    if not _ENV_NAME.match(text):
        raise argparse.ArgumentTypeError(
            "not an environment variable name (letters, digits and '_'); pass the "
            "NAME of the variable that holds the key, never the key itself"
        )
    return text


def float_in(low: float, high: float | None, *, low_open: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value != value or (value <= low if low_open else value < low) or (high is not None and value > high):
            bound = f"{'>' if low_open else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")
            raise argparse.ArgumentTypeError(f"{text} is out of range; it must be {bound}")
        return value

    parse.__name__ = "number"
    return parse


def _device(text: str) -> str:
    if text in ("auto", "cpu", "cuda") or (text.startswith("cuda:") and text[5:].isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not a device; choose auto, cpu, cuda or cuda:N")


_SPEC_DEFAULTS = {f.name: f.default for f in dataclasses.fields(RunSpec)}


def run_option(flag: str, help: str, kwargs: dict[str, object] | None = None) -> Option:
    """An option for a RunSpec field; its help shows the field's default."""
    opt = Option(flag, help, kwargs or {})
    return opt.with_default(_SPEC_DEFAULTS[opt.dest]) if opt.dest in _SPEC_DEFAULTS else opt


RUN_OPTIONS: tuple[Option, ...] = (
    Option("--model", "local model directory or hub id from the local HF cache (default: bundled all-MiniLM-L6-v2)"),
    Option(
        "--model-name",
        "the model's lineage, shared by every release whatever directory it is built into: recorded in the contract, "
        "reports and release history, and what history gates follow (default: the directory's or hub id's name)",
        {"metavar": "NAME"},
    ),
    Option("--model-rev", "pinned model revision: 40-hex hub commit, or the digest `evalsuite model-rev DIR` prints"),
    Option("--tokenizer-rev", "pinned tokenizer revision (same forms as --model-rev)"),
    Option("--dataset", "dataset directory: BEIR layout or a saved Hugging Face dataset (default: `bundled`)"),
    run_option("--split", "qrels split"),
    Option("--qrels", "qrels file to use instead of qrels/<split>.tsv (BEIR TSV or TREC 'qid 0 docid rel')"),
    run_option(
        "--empty-docs",
        "documents with empty title and text: keep (encode ''), skip (drop them and their judgements) or error",
        {"choices": EMPTY_POLICIES},
    ),
    run_option(
        "--empty-queries",
        "queries with empty text: skip (drop them), keep (encode '') or error",
        {"choices": EMPTY_POLICIES},
    ),
    Option("--pooling", "pooling (default: what the model declares)", {"choices": POOLINGS}),
    Option("--query-prefix", "text prepended to every query (default: the model's 'query' prompt, else none)"),
    Option("--doc-prefix", "text prepended to every document (default: the model's document prompt, else none)"),
    run_option("--dtype", "forward-pass dtype", {"choices": DTYPES}),
    Option("--max-length", "max tokens per text (default: the model's max_seq_length)", {"type": int_at_least(2)}),
    run_option("--truncation", "over-long texts: truncate and count, or reject", {"choices": TRUNCATIONS}),
    Option(
        "--dim", "output dimension: keep the first N dims, then re-normalize (Matryoshka)", {"type": int_at_least(1)}
    ),
    Option(
        "--no-normalize",
        "do not L2-normalize vectors (similarity becomes dot)",
        {"action": "store_const", "const": False, "dest_name": "normalize"},
    ),
    Option("--similarity", "index similarity (default: cosine, or dot when not normalized)", {"choices": SIMILARITIES}),
    run_option("--device", "auto, cpu, cuda or cuda:N", {"type": _device}),
    run_option("--metrics", "comma-separated ranx metrics", {"type": spec_type(parse_metrics, "metrics")}),
    run_option("--batch-size", "max texts per forward batch", {"type": int_at_least(1)}),
    Option(
        "--trust-remote-code",
        "allow the model repository's own Python code to run (off by default)",
        {"action": "store_const", "const": True},
    ),
    run_option(
        "--index",
        "FAISS index searched: flat (exact), hnsw[:M=32,efc=40,ef=64], ivf[:nlist=256,nprobe=16], "
        "ivfpq[:nlist=256,m=..,nbits=8], sq8, binary[+rescore=R]; parameters are clamped to the corpus "
        "and recorded",
        {"type": spec_type(canonical_index, "index")},
    ),
    run_option(
        "--executor",
        "where the reference encoder runs: in-process, or ray (extra evalsuite[ray])",
        {"choices": EXECUTORS},
    ),
    Option("--ray-address", "HOST:PORT or ray://HOST:PORT of a running Ray cluster (default: a local Ray)"),
    run_option(
        "--ray-actors", "models encoding at once on Ray (one GPU each where CUDA is present)", {"type": int_at_least(1)}
    ),
    Option(
        "--ray-ship-model",
        "send the pinned model's files to the Ray actors through the object store (nodes that do not share "
        "the driver's disk); each node checks their sha256 against the pinned revision",
        {"action": "store_const", "const": True},
    ),
    Option(
        "--ray-model-path",
        "directory where every Ray node reads the model (a shared filesystem); checked by sha256 on each node",
        {"metavar": "DIR"},
    ),
    run_option(
        "--chunk-size",
        "encode N documents at a time into an on-disk vector store and search it block by "
        "block (bounded memory); 0 keeps the vectors in memory; default: in memory, chunks of "
        f"{AUTO_CHUNK_SIZE:,} when the corpus file is {AUTO_CHUNK_BYTES // 2**20} MiB or more",
        {"type": int_at_least(0)},
    ),
    run_option("--block-rows", "stored vectors per search block", {"type": int_at_least(1)}),
    Option("--store-dir", "directory for the run's vector store with --chunk-size (default: a temporary one)"),
    Option("--cache-dir", "embedding cache directory (default: the user cache directory)"),
    Option(
        "--no-cache",
        "do not read or write the embedding cache or the result cache (recompute everything)",
        {"action": "store_const", "const": False, "dest_name": "use_cache"},
    ),
    Option(
        "--slice-by",
        "report metrics per value of this query metadata field (doc.FIELD: of the relevant "
        "documents), repeatable; query and document length slices are always reported "
        "(default: topic or domain when the queries have it)",
        {"action": "append", "metavar": "FIELD"},
    ),
)


def _retrieval_text(text: str) -> str:
    from ..retrieval.retrievers import parse_retrieval

    parse_retrieval(text)  # checked now; the settings below may still be applied over it
    return text.strip()


def _retrieval_options() -> tuple[Option, ...]:
    """``--retrieval`` and one option per retriever parameter (``--fusion-k``, ``--bm25-k1``), read from the
    declarations in :mod:`evalsuite.retrieval.retrievers.kinds`; each is also a spec key."""
    from ..retrieval.retrievers import RETRIEVER_NAMES, RETRIEVERS
    from ..retrieval.retrievers.kinds import all_params

    described = "; ".join(f"{r.name}: {r.explanation}" for r in RETRIEVERS)
    out = [
        run_option(
            "--retrieval",
            f"the retriever whose ranking is scored ({described}); a text may set its parameters, "
            "e.g. bm25:k1=1.2,b=0.6 or hybrid:fuse=dense+bm25,fusion=wsum,weights=0.7+0.3",
            {"type": spec_type(_retrieval_text, "retrieval"), "metavar": "{" + ",".join(RETRIEVER_NAMES) + "}[:...]"},
        )
    ]
    for p in all_params():
        kw: dict[str, Any] = {"type": spec_type(p.parse, p.setting), "metavar": p.setting.upper()}
        if p.choices and p.kind == "choice":
            kw["metavar"] = "{" + ",".join(p.choices) + "}"
        default = p.render(p.default) if p.default is not None else None
        out.append(Option(p.flag, p.explanation, kw, default=default))
    return tuple(out)


RETRIEVAL_OPTIONS: tuple[Option, ...] = _retrieval_options()
RUN_OPTIONS = (*RUN_OPTIONS, *RETRIEVAL_OPTIONS)

# The report directory of `evalsuite run`, `sweep` and `canary`; each command states its default.
OUT_OPTION = Option("--out", "report directory", {"metavar": "DIR"})


# The endpoint client's flags (encode.endpoint_config.EndpointConfig owns their defaults), declared once here:
# `evalsuite run --endpoint` uses them for a served deployment as the encoder (RUN_ENDPOINT_OPTIONS), the canary
# for the deployment it checks (canary/embedding/options.py), `load` and `verify` through the canary's.
def _client_defaults() -> dict[str, object]:
    from ..encode.endpoint_config import EndpointConfig

    defaults = {f.name: f.default for f in dataclasses.fields(EndpointConfig)}
    fields = {"endpoint_timeout": "timeout", "endpoint_concurrency": "concurrency"}
    fields |= {"endpoint_batch_size": "batch_size", "encoding_format": "encoding_format"}
    return {dest: defaults[name] for dest, name in fields.items()}


_CLIENT_DEFAULTS = _client_defaults()


def _client(flag: str, help: str, kwargs: dict[str, Any]) -> Option:
    opt = Option(flag, help, kwargs)
    return opt.with_default(_CLIENT_DEFAULTS[opt.dest]) if opt.dest in _CLIENT_DEFAULTS else opt


CLIENT_OPTIONS: tuple[Option, ...] = (
    _client(
        "--served-model", "model name the server serves (default: the only one /v1/models lists)", {"metavar": "NAME"}
    ),
    _client(
        "--api-key-env",
        "NAME of the environment variable holding the API key, sent to --endpoint and "
        "--reranker-endpoint alike (the key is never printed or written)",
        {"type": env_name, "metavar": "VAR"},
    ),
    _client(
        "--endpoint-timeout",
        "seconds to wait for each HTTP answer",
        {"type": float_in(0.0, None, low_open=True), "metavar": "SECONDS"},
    ),
    _client("--endpoint-concurrency", "max requests in flight per URL", {"type": int_at_least(1), "metavar": "N"}),
    _client("--endpoint-batch-size", "max texts per request", {"type": int_at_least(1), "metavar": "N"}),
    _client("--encoding-format", "response encoding", {"choices": ENCODING_FORMATS, "metavar": "float|base64"}),
)
CLIENT = {o.flag: o for o in CLIENT_OPTIONS}


def prefixed(opt: Option, prefix: str) -> Option:
    """``opt`` with its help prefixed by what uses it ("canary: ", "with --endpoint: ")."""
    return dataclasses.replace(opt, help=prefix + opt.help)


# `evalsuite run --endpoint URL [--endpoint URL ...]`: a served deployment as the encoder (evalsuite.encode.fleet)
RUN_ENDPOINT_OPTIONS: tuple[Option, ...] = (
    Option(
        "--endpoint",
        "evaluate the model as served: OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1; "
        "repeat for a fleet (batches are spread over the URLs, which must all serve one model)",
        {"type": spec_type(url, "url"), "metavar": "URL", "action": "append", "dest_name": "endpoints"},
    ),
    *(prefixed(o, "with --endpoint: ") for o in CLIENT_OPTIONS),
    Option(
        "--endpoint-dimensions",
        "with --endpoint: ask the server for --dim columns ('dimensions') instead of "
        "cutting and re-normalizing the full vectors here",
        {"action": "store_const", "const": True},
    ),
)


def add_options(add: Callable[..., object], options: Iterable[Option] = RUN_OPTIONS, dest_prefix: str = "") -> None:
    """Register options (by default the run's) with ``argparse``'s ``add_argument`` or pytest's ``addoption``."""
    add_declared(add, options, dest_prefix)


def collect(values: Any, options: Iterable[Option] = RUN_OPTIONS, dest_prefix: str = "") -> dict[str, Any]:
    """The settings a user actually gave (by default of the run's options), as {spec field: value}."""
    return collect_declared(values, options, dest_prefix)
