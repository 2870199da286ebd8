"""Tiny random-weight cross-encoders (BertForSequenceClassification, one label), built once per session.

The classifier weights are scaled up so scores spread across pairs (a random head of std 0.02 would give
logits within a few hundredths of each other); nothing here imports torch at collection time.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def real_vocab_tokenizer(path: Path) -> None:
    """Re-save the tokenizer of ``path`` from its vocab.txt as a mapping.

    Under transformers 5, ``BertTokenizerFast(vocab_file=...)`` (what the shared tiny BERT uses) keeps only
    the five special tokens, so every word reads as [UNK]; a reranker test needs the words.
    """
    from transformers import BertTokenizerFast

    words = (path / "vocab.txt").read_text().splitlines()
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}, do_lower_case=True, model_max_length=128)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (path / name).unlink(missing_ok=True)
    tok.save_pretrained(str(path))


def write_tiny_cross_encoder(
    write_bert: Callable[..., Path],
    path: Path,
    *,
    seed: int = 0,
    hidden: int = 32,
    head_scale: float = 3.0,
    init_range: float = 0.3,
    activation: str | None = None,
) -> Path:
    """Save a random one-label BERT cross-encoder and its WordPiece tokenizer (the tiny BERT's vocabulary)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    write_bert(path, sentence_transformers_layout=False, hidden=hidden, seed=seed)
    real_vocab_tokenizer(path)
    torch.manual_seed(seed)
    config = BertConfig.from_pretrained(str(path))
    config.num_labels = 1
    config.initializer_range = init_range  # a wide init makes the [CLS] state depend on the pair
    model = BertForSequenceClassification(config).eval()
    with torch.no_grad():
        model.classifier.weight.mul_(head_scale)
        # centre the logits on a few probe pairs, so a sigmoid does not flatten them
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(path))
        probe = tok(
            ["how does a database commit", "why does bread rise", "the team score"],
            ["a transaction commit is durable", "the ball goes through the basket", "yeast makes dough rise"],
            padding=True,
            return_tensors="pt",
        )
        model.classifier.bias.sub_(model(**probe).logits.mean())
    model.save_pretrained(str(path))
    if activation is not None:
        cfg = json.loads((path / "config.json").read_text())
        cfg["sentence_transformers"] = {"activation_fn": activation}
        (path / "config.json").write_text(json.dumps(cfg, indent=2))
    return path


@pytest.fixture(scope="session")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory, make_tiny_bert: Callable[..., Path]) -> Path:
    """A tiny cross-encoder that declares nothing about its activation (sigmoid by default)."""
    return write_tiny_cross_encoder(make_tiny_bert, tmp_path_factory.mktemp("tiny-ce") / "ce")


@pytest.fixture(scope="session")
def make_cross_encoder(make_tiny_bert: Callable[..., Path]) -> Callable[..., Path]:
    def make(path: Path, **kw: object) -> Path:
        return write_tiny_cross_encoder(make_tiny_bert, path, **kw)  # type: ignore[arg-type]

    return make


@pytest.fixture(scope="session")
def copy_dir():
    def copy(src: Path, dest: Path) -> Path:
        shutil.copytree(src, dest)
        return dest

    return copy


class RerankFaultServer:
    """Answers POST /v1/rerank like Infinity (sorted by score, sigmoid applied), with an optional ``fault``."""

    def __init__(self, httpserver: Any, reference: Any) -> None:
        self.httpserver, self.reference, self.fault = httpserver, reference, "none"
        httpserver.expect_request("/v1/rerank", method="POST").respond_with_handler(self.answer)

    @property
    def url(self) -> str:
        return self.httpserver.url_for("/v1")

    def answer(self, request: Any) -> Any:
        from werkzeug import Response

        body = json.loads(request.data)
        docs = body["documents"]
        if not docs:
            status = 500 if self.fault == "server_error_on_empty" else 422
            return Response(
                json.dumps({"detail": "documents must not be empty"}), status, content_type="application/json"
            )
        if self.fault == "refuse_long" and any(len(d) > 1000 for d in docs):
            return Response(json.dumps({"detail": "input too long"}), 413, content_type="application/json")
        scores = self.reference.score([(body["query"], d) for d in docs]).tolist()
        if self.fault == "no_activation":
            scores = [math.log(s / (1 - s)) for s in scores]
        elif self.fault == "one_off":  # a partial fault: one document's score per query is 0.05 off
            scores[0] += 0.05 if scores[0] < 0.5 else -0.05
        elif self.fault == "swap_tail" and len(scores) > 1:  # the two lowest-scoring documents trade scores
            low, second = sorted(range(len(scores)), key=lambda i: scores[i])[:2]
            scores[low], scores[second] = scores[second], scores[low]
        results = sorted(
            ({"index": i, "relevance_score": s} for i, s in enumerate(scores)), key=lambda r: -r["relevance_score"]
        )
        if body.get("top_n") and self.fault != "ignores_top_n":
            results = results[: body["top_n"]]
        f = self.fault
        if f == "shuffled" and len(results) > 1:
            results = results[1:] + results[:1]
        elif f == "missing" and len(results) > 1:
            results = results[:-1]
        elif f == "duplicate" and len(results) > 1:
            results[-1] = dict(results[-1], index=results[0]["index"])
        elif f == "out_of_range":
            results[0] = dict(results[0], index=len(docs))
        elif f == "wrong_documents" and len(results) > 1:  # scores stay sorted, indices rotate
            idx = [r["index"] for r in results]
            results = [dict(r, index=idx[(k + 1) % len(idx)]) for k, r in enumerate(results)]
        elif f == "nan":
            results[-1] = dict(results[-1], relevance_score=float("nan"))
        text = json.dumps({"object": "rerank", "results": results, "model": "tiny-ce"})
        return Response(text, 200, content_type="application/json")


@pytest.fixture(scope="session")
def reference(cross_encoder_dir):
    from evalsuite.model import resolve_model
    from evalsuite.rerank.contract import build_reranker_contract
    from evalsuite.rerank.local import LocalReranker

    info = resolve_model(str(cross_encoder_dir))
    return LocalReranker(info, build_reranker_contract(info), device="cpu")


@pytest.fixture
def server(httpserver, reference):
    """A /v1/rerank server on loopback that scores with the tiny cross-encoder (faithful until a test sets a fault)."""
    return RerankFaultServer(httpserver, reference)


@pytest.fixture
def canary_argv(tiny_model_dir, small_beir, cross_encoder_dir):
    """``argv(command, url, out, *extra)``: a reranker canary of the tiny cross-encoder over the tiny model's first
    stage on ``small_beir`` (6 documents per query); ``url=None`` or ``reranker=False`` leave that option out."""

    def argv(command: str, url: str | None, out: Path, *extra: str, reranker: bool = True) -> list[str]:
        return [
            command,
            *(["--reranker-endpoint", url] if url else []),
            *(["--reranker", str(cross_encoder_dir)] if reranker else []),
            *("--model", str(tiny_model_dir), "--dataset", str(small_beir), "--device", "cpu", "--no-cache"),
            *("--out", str(out), "--reranker-canary-depth", "6"),
            *extra,
        ]

    return argv
