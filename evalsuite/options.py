"""Option definitions shared by the `evalsuite` CLI and the pytest plugin, so the two cannot drift.

Each option is declared once with a parser that rejects bad values at parse time. Defaults are
``None`` here: the spec file or the model's own declaration fills what the user did not say.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .contract import DTYPES, POOLINGS, SIMILARITIES, TRUNCATIONS
from .errors import SpecError
from .metrics import parse_metrics


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


def _metrics(text: str) -> tuple[str, ...]:
    try:
        return parse_metrics(text)
    except SpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _device(text: str) -> str:
    if text in ("auto", "cpu", "cuda") or (text.startswith("cuda:") and text[5:].isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not a device; choose auto, cpu, cuda or cuda:N")


@dataclass(frozen=True)
class Option:
    flag: str
    help: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


RUN_OPTIONS: tuple[Option, ...] = (
    Option("--model", "local model directory or hub id from the local HF cache (default: bundled all-MiniLM-L6-v2)"),
    Option("--model-rev", "pinned model revision: 40-hex hub commit, or the digest `evalsuite model-rev DIR` prints"),
    Option("--tokenizer-rev", "pinned tokenizer revision (same forms as --model-rev)"),
    Option("--dataset", "dataset directory: BEIR layout or a saved Hugging Face dataset (default: bundled fixtures)"),
    Option("--split", "qrels split (default: test)"),
    Option("--qrels", "qrels file to use instead of qrels/<split>.tsv (BEIR TSV or TREC 'qid 0 docid rel')"),
    Option("--pooling", "pooling (default: what the model declares)", {"choices": POOLINGS}),
    Option("--query-prefix", "text prepended to every query (default: the model's 'query' prompt, else none)"),
    Option("--doc-prefix", "text prepended to every document (default: the model's document prompt, else none)"),
    Option("--dtype", "forward-pass dtype (default: float32)", {"choices": DTYPES}),
    Option("--max-length", "max tokens per text (default: the model's max_seq_length)", {"type": int_at_least(2)}),
    Option("--truncation", "over-long texts: truncate and count, or reject (default: truncate)",
           {"choices": TRUNCATIONS}),
    Option("--dim", "output dimension: keep the first N dims, then re-normalize (Matryoshka)",
           {"type": int_at_least(1)}),
    Option("--no-normalize", "do not L2-normalize vectors (similarity becomes dot)",
           {"action": "store_const", "const": False, "dest_name": "normalize"}),
    Option("--similarity", "index similarity (default: cosine, or dot when not normalized)",
           {"choices": SIMILARITIES}),
    Option("--device", "auto, cpu, cuda or cuda:N (default: auto)", {"type": _device}),
    Option("--metrics", "comma-separated ranx metrics (default: ndcg@10,recall@10,recall@100,mrr@10)",
           {"type": _metrics}),
    Option("--batch-size", "max texts per forward batch (default: 64)", {"type": int_at_least(1)}),
    Option("--trust-remote-code", "allow the model repository's own Python code to run (off by default)",
           {"action": "store_const", "const": True}),
    Option("--cache-dir", "embedding cache directory (default: the user cache directory)"),
    Option("--no-cache", "do not read or write the embedding cache",
           {"action": "store_const", "const": False, "dest_name": "use_cache"}),
)


def add_options(add: Callable[..., Any], options: Iterable[Option] = RUN_OPTIONS, dest_prefix: str = "") -> None:
    """Register options with ``argparse``'s ``add_argument`` or pytest's ``addoption``."""
    for opt in options:
        kw = dict(opt.kwargs)
        dest = kw.pop("dest_name", opt.name)
        if kw.get("action") != "store_const":
            kw.setdefault("metavar", "{" + ",".join(kw["choices"]) + "}" if "choices" in kw else opt.name.upper())
        add(opt.flag, dest=dest_prefix + dest, default=None, help=opt.help.replace("%", "%%"), **kw)


def collect(values: Any, options: Iterable[Option] = RUN_OPTIONS, dest_prefix: str = "") -> dict[str, Any]:
    """The settings a user actually gave, as {spec field: value}."""
    out = {}
    for opt in options:
        dest = opt.kwargs.get("dest_name", opt.name)
        value = getattr(values, dest_prefix + dest, None)
        if value is not None:
            out[dest] = value
    return out


def _gate(text: str) -> str:
    from .gates import parse_gate

    try:
        return parse_gate(text).expr
    except SpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


PYTEST_OPTIONS: tuple[Option, ...] = (
    Option("--baseline", "baseline JSON to gate against (written by --update-baseline)"),
    Option("--update-baseline", "write the baseline from this run (atomically); gates are skipped",
           {"action": "store_const", "const": True}),
    Option("--reference-model", "model of the reference run (default: --model)"),
    Option("--reference-rev", "pinned revision of a reference run computed on the fly (A/B of two revisions)"),
    Option("--gate", "gate expression, repeatable: 'ndcg@10>=0.35', 'ndcg@10:max_drop=0.01', "
           "'recall@100:max_rel_drop=2%', 'mrr@10:no_significant_drop'",
           {"action": "append", "type": _gate, "dest_name": "gates"}),
    Option("--reports-dir", "where results.json and report.md go (default: reports/evalsuite)"),
    Option("--evalsuite-spec", "spec file (default: ./evalsuite.toml, else [tool.evalsuite] in ./pyproject.toml)",
           {"dest_name": "spec"}),
)
