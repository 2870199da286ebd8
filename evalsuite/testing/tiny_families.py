"""Tiny random-weight models of the families users serve, written as sentence-transformers directories offline.

Each family is one declaration in :data:`FAMILIES` (what its directory declares) built by :func:`write_family`:
decoders (Qwen3, Qwen2: last-token pooling, an EOS appended by the tokenizer's post-processor, left or right
padding, a query instruction), a BGE-style BERT (CLS pooling, a query instruction), an XLM-RoBERTa with a
Unigram (sentencepiece-style) tokenizer and ``query: `` / ``passage: `` prompts, a Dense head, the
weighted-mean / max / mean-sqrt-len poolings and ``include_prompt: false``. Tokenizers are trained with the
``tokenizers`` library on :data:`evalsuite.testing.tiny_bert.WORDS` and the prompts; nothing downloads. torch,
transformers and tokenizers are imported inside the builders only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .tiny_bert import WORDS, write_tiny_bert

QWEN_QUERY_PROMPT = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: "
BGE_QUERY_PROMPT = "Represent this sentence for searching relevant passages: "
RETRIEVAL_PROMPT = "Represent this text for retrieval: "
EOS = "<|endoftext|>"
ST_NAMES = {  # the contract's pooling names -> sentence-transformers' pooling_mode names
    "cls": "cls",
    "mean": "mean",
    "last": "lasttoken",
    "max": "max",
    "weightedmean": "weightedmean",
    "mean_sqrt_len": "mean_sqrt_len_tokens",
}


@dataclass(frozen=True)
class Family:
    """One tiny model: its architecture and what its sentence-transformers files declare."""

    name: str
    arch: str  # qwen3 | qwen2 | bert | xlmr
    pooling: str  # the contract's name
    prompts: Mapping[str, str] = field(default_factory=dict)
    padding_side: str = "right"
    single_key: bool = True  # the Pooling config's form: "pooling_mode": "..." or the per-mode booleans
    include_prompt: bool = True
    dense: tuple[tuple[int, str], ...] = ()  # (out_features, activation class name) per Dense head
    normalize: bool = True
    doc_prompt_name: str | None = None  # the name of the document prompt (for the oracle's prompt_name)
    default_prompt_name: str | None = None  # config_sentence_transformers.json's default_prompt_name


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("qwen3", "qwen3", "last", {"query": QWEN_QUERY_PROMPT, "document": ""}, padding_side="left"),
        Family("qwen2", "qwen2", "last", {"query": QWEN_QUERY_PROMPT}, padding_side="right", single_key=False),
        Family("bge", "bert", "cls", {"query": BGE_QUERY_PROMPT}, single_key=False),
        Family("xlmr", "xlmr", "mean", {"query": "query: ", "passage": "passage: "}, doc_prompt_name="passage"),
        Family("dense", "bert", "mean", dense=((24, "Tanh"), (16, "Identity"))),
        Family("weightedmean", "qwen3", "weightedmean", {"query": QWEN_QUERY_PROMPT}),
        Family("max", "bert", "max"),
        Family("mean_sqrt_len", "bert", "mean_sqrt_len", normalize=False),
        Family("no_prompt_pooling", "bert", "mean", {"query": BGE_QUERY_PROMPT}, include_prompt=False),
        # documents declare no prompt of their own: they get the default one (as sentence-transformers' encode)
        Family(
            "default_prompt",
            "qwen3",
            "last",
            {"query": QWEN_QUERY_PROMPT, "retrieval": RETRIEVAL_PROMPT},
            padding_side="left",
            default_prompt_name="retrieval",
        ),
    )
}
MAX_LENGTH = 128  # sentence_bert_config.json's max_seq_length (the decoders support 512 positions)


def corpus() -> list[str]:
    """What the tokenizers are trained on: sentences of WORDS and the prompts."""
    words = list(dict.fromkeys(WORDS))
    lines = [" ".join(words[i : i + 7]) for i in range(0, len(words), 3)]
    return lines + [QWEN_QUERY_PROMPT, BGE_QUERY_PROMPT, "query: passage: "] * 3 + words


def _bpe_with_eos(padding_side: str) -> Any:
    """A byte-level BPE (any text encodes) whose post-processor appends EOS, as Qwen's tokenizer does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    eos_id = tok.token_to_id(EOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}", special_tokens=[(EOS, eos_id)]
    )
    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok,
        eos_token=EOS,
        pad_token=EOS,
        padding_side=padding_side,
        model_max_length=512,
        model_input_names=["input_ids", "attention_mask"],
    )


def _unigram() -> Any:
    """A sentencepiece-style Unigram tokenizer (Metaspace) with XLM-R's specials and ``<s> $A </s>``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(
        vocab_size=300,
        special_tokens=specials,
        unk_token="<unk>",
        initial_alphabet=list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:?!-'\n"),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))],
    )
    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        cls_token="<s>",
        sep_token="</s>",
        model_max_length=MAX_LENGTH,
        model_input_names=["input_ids", "attention_mask"],
    )


def _write_transformer(family: Family, path: Path, seed: int) -> int:
    """The transformer and its tokenizer in ``path``; returns the hidden size."""
    import torch

    if family.arch == "bert":
        write_tiny_bert(path, sentence_transformers_layout=False, seed=seed)
        return 32
    torch.manual_seed(seed)
    if family.arch in ("qwen3", "qwen2"):
        from transformers import Qwen2Config, Qwen2Model, Qwen3Config, Qwen3Model

        tok = _bpe_with_eos(family.padding_side)
        common: dict[str, Any] = {
            "vocab_size": len(tok),
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "intermediate_size": 128,
            "max_position_embeddings": 512,
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": None,  # the tokenizer pads with EOS; a padding_idx here would zero EOS's embedding
            "bos_token_id": None,
            "tie_word_embeddings": True,
        }
        if family.arch == "qwen3":
            config: Any = Qwen3Config(head_dim=32, **common)
            model: Any = Qwen3Model(config)
            config.architectures = ["Qwen3ForCausalLM"]
        else:
            config = Qwen2Config(**common)  # head dim 64 / 2 = 32: vLLM's CPU attention refuses 16
            model = Qwen2Model(config)
            config.architectures = ["Qwen2ForCausalLM"]
        hidden = 64
    else:
        from transformers import XLMRobertaConfig, XLMRobertaModel

        tok = _unigram()
        config = XLMRobertaConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=MAX_LENGTH + 2,
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            type_vocab_size=1,
        )
        model = XLMRobertaModel(config, add_pooling_layer=False)
        hidden = 32
    tok.save_pretrained(str(path))
    # transformers 5 names its generic fast tokenizer "TokenizersBackend", which transformers 4 (Infinity's,
    # TEI's loaders) cannot load; "PreTrainedTokenizerFast" is the same class to both
    cfg_file = path / "tokenizer_config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_file.write_text(json.dumps(cfg, indent=2))
    model.eval().save_pretrained(str(path))
    return hidden


def _write_dense(sub: Path, in_features: int, out_features: int, activation: str, seed: int) -> None:
    import torch
    from safetensors.torch import save_file

    sub.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(seed)
    save_file(
        {
            "linear.weight": torch.randn(out_features, in_features, generator=gen) / in_features**0.5,
            "linear.bias": torch.randn(out_features, generator=gen) * 0.1,
        },
        str(sub / "model.safetensors"),
    )
    module = "torch.nn.modules.linear" if activation == "Identity" else "torch.nn.modules.activation"
    cfg = {"in_features": in_features, "out_features": out_features, "bias": True}
    (sub / "config.json").write_text(json.dumps({**cfg, "activation_function": f"{module}.{activation}"}, indent=2))


def write_family(name: str, path: Path, *, seed: int = 0) -> Path:
    """Save the tiny model of family ``name`` (a key of :data:`FAMILIES`) to ``path`` as a sentence-transformers
    directory and return ``path``."""
    family = FAMILIES[name]
    path.mkdir(parents=True, exist_ok=True)
    hidden = _write_transformer(family, path, seed)
    modules: list[dict[str, object]] = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    pooling: dict[str, object] = {}
    if family.single_key:  # sentence-transformers 6's form
        pooling = {"embedding_dimension": hidden, "pooling_mode": ST_NAMES[family.pooling]}
    else:  # the form before it (which sentence-transformers < 5, e.g. Infinity's, can only read)
        pooling = {"word_embedding_dimension": hidden}
        pooling.update({f"pooling_mode_{k}": k == _LEGACY[family.pooling] for k in _LEGACY.values()})
    pooling["include_prompt"] = family.include_prompt
    (path / "1_Pooling").mkdir(exist_ok=True)
    (path / "1_Pooling" / "config.json").write_text(json.dumps(pooling, indent=2))
    dim = hidden
    for i, (out, activation) in enumerate(family.dense):
        sub = f"{len(modules)}_Dense"
        _write_dense(path / sub, dim, out, activation, seed + 1 + i)
        modules.append(
            {"idx": len(modules), "name": str(len(modules)), "path": sub, "type": "sentence_transformers.models.Dense"}
        )
        dim = out
    if family.normalize:
        sub = f"{len(modules)}_Normalize"
        modules.append(
            {
                "idx": len(modules),
                "name": str(len(modules)),
                "path": sub,
                "type": "sentence_transformers.models.Normalize",
            }
        )
    (path / "modules.json").write_text(json.dumps(modules, indent=2))
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": MAX_LENGTH, "do_lower_case": False}))
    st_config: dict[str, object] = {"prompts": dict(family.prompts), "default_prompt_name": family.default_prompt_name}
    st_config["similarity_fn_name"] = "cosine" if family.normalize else "dot"
    (path / "config_sentence_transformers.json").write_text(json.dumps(st_config, indent=2))
    return path


_LEGACY = {
    "cls": "cls_token",
    "mean": "mean_tokens",
    "last": "lasttoken",
    "max": "max_tokens",
    "weightedmean": "weightedmean_tokens",
    "mean_sqrt_len": "mean_sqrt_len_tokens",
}
