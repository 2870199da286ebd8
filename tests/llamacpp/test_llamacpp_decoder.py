"""A decoder embedding model (issue 30's tiny Qwen3: byte-level BPE whose post-processor appends EOS, last-token
pooling) converted to GGUF by the sdist's own converter and served by llama-cpp-python (see conftest).

The converter writes ``qwen3.pooling_type`` 3 (last) and ``tokenizer.ggml.add_eos_token`` true on its own; only the
pre-tokenizer name has to be given (``convert_bpe.py``), and llama.cpp then tokenizes as the reference does. Served
at the contract's 128 tokens the file passes vector and retrieval agreement within vLLM's tolerances; a copy whose
``add_eos_token`` is false (the conversion fault reported for Qwen3-Embedding: for a BPE vocabulary the key counts,
unlike BERT's) is named ``special=no_closing`` with llama-cpp-python's remedy, and a copy whose pooling type says
mean is named ``pooling=mean``.
"""

from __future__ import annotations

import json

import pytest

from .conftest import DECODER_NAME, gguf_metadata
from .convert_bpe import pre_tokenizer_name
from .test_llamacpp_canary import causes

pytestmark = [pytest.mark.integration, pytest.mark.llamacpp, pytest.mark.xdist_group("llamacpp")]

# texts the pre-tokenizer regexes split differently (contractions in capitals, digit runs, space runs, newlines, tabs,
# non-ASCII), the query instruction, and the empty text (EOS alone). With the tiny vocabulary's letter-only merges
# qwen2's and the default regex give the same ids on them; a BOS (llama3), a lost EOS or a wrong vocabulary do not
TEXTS = [
    "how does a database commit a transaction",
    "  two  spaces\n\nand\tlines \n",
    "It's 3.14 o'clock, isn't it? 'RE you sure? We'Ve 12345 ünïcödé 🦙!",
    "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: why",
    "x",
    "",
]
DETECT = ("--canary-detect", "0.5")  # fewer repeated requests (the BERT tests check a replica share of 0.1)


def canary(decoders, url, dataset, out, cache, *extra):
    from evalsuite.cli import main

    argv = ["canary", "--endpoint", url, "--dataset", str(dataset), "--device", "cpu", "--no-normalize"]
    argv += ["--model", str(decoders.model_dir), "--cache-dir", str(cache), "--out", str(out), *extra]
    rc = main(argv)
    report = json.loads((out / "canary.json").read_text())
    return rc, {v["check"]: v for v in report["verdicts"]}, report


def served_tokens(url: str, text: str) -> list[int]:
    import httpx

    answer = httpx.post(f"{url.removesuffix('/v1')}/extras/tokenize", json={"input": text}, timeout=60)
    answer.raise_for_status()
    return list(answer.json()["tokens"])


def test_the_converter_writes_last_pooling_and_the_eos_and_llamacpp_tokenizes_as_the_reference(llamacpp_decoders):
    from transformers import AutoTokenizer

    written = gguf_metadata(llamacpp_decoders.gguf)
    assert written["general.architecture"] == "qwen3"
    assert written["qwen3.pooling_type"] == 3  # from 1_Pooling's "pooling_mode": "lasttoken"
    assert written["tokenizer.ggml.add_eos_token"] is True  # from tokenizer.json's post-processor
    assert written["tokenizer.ggml.pre"] == "gpt-2" and "tokenizer.ggml.add_bos_token" not in written
    tokenizer = AutoTokenizer.from_pretrained(str(llamacpp_decoders.model_dir))
    eos = tokenizer.eos_token_id
    for text in TEXTS:
        reference = tokenizer(text)["input_ids"]
        assert reference[-1] == eos, text
        assert served_tokens(llamacpp_decoders.faithful, text) == reference, text
        assert served_tokens(llamacpp_decoders.noeos, text) == reference[:-1], text  # the same ids, no EOS


def test_the_driver_names_only_a_bare_gpt2_byte_level_pre_tokenizer(tmp_path):
    """The converter's hash table is bypassed for one pre-tokenizer only: any other is refused, naming it."""
    gpt2 = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}

    def name(pre, normalizer=None):
        (tmp_path / "tokenizer.json").write_text(json.dumps({"normalizer": normalizer, "pre_tokenizer": pre}))
        return pre_tokenizer_name(tmp_path)

    assert name(gpt2) == "gpt-2"
    for pre, normalizer in (
        ({**gpt2, "add_prefix_space": True}, None),
        ({**gpt2, "use_regex": False}, None),
        ({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}, None),
        (gpt2, {"type": "NFC"}),
        (None, None),
    ):
        with pytest.raises(SystemExit, match="is not a bare GPT-2 byte-level pre-tokenizer"):
            name(pre, normalizer)


def test_the_faithful_decoder_gguf_agrees_with_the_reference(
    llamacpp_decoders, small_beir, tmp_path, reference_cache, capsys
):
    rc, verdicts, report = canary(
        llamacpp_decoders, llamacpp_decoders.faithful, small_beir, tmp_path, reference_cache, *DETECT
    )
    out = capsys.readouterr().out
    assert report["served_model"] == DECODER_NAME
    # vLLM's tolerances (tests/vllm/test_vllm_canary.py)
    assert verdicts["vector_agreement"]["passed"] is True, out
    assert verdicts["vector_agreement"]["details"]["min"] >= 0.9999
    assert abs(verdicts["retrieval_agreement"]["details"]["metrics"]["ndcg@10"]["delta"]) <= 0.002
    # bad_input fails on the over-long probe alone: cut after its EOS, which last-token pooling reads, it is a
    # different vector, named as the cut (the empty list's 500 is a warning, as for BERT)
    assert rc == 1, out
    assert [c for c, v in verdicts.items() if v["passed"] is False] == ["bad_input"], out
    bad = verdicts["bad_input"]
    assert bad["details"]["empty_string"] == 200 and bad["details"]["empty_string_cosine"] >= 0.9999
    assert bad["details"]["empty_list"] == 500 and "warning: empty list -> HTTP 500" in bad["message"], bad
    assert bad["details"]["over_long"]["cosine"] < 0.9, bad["details"]
    assert "over-long input -> HTTP 200 with a vector unlike the reference" in bad["message"], bad["message"]
    assert causes(report) == [("special", "cut")], out
    assert "(special tokens included) before sending them" in out and "text EOS for a decoder" in out, out


def test_a_decoder_gguf_without_the_eos_is_named_no_closing(
    llamacpp_decoders, small_beir, tmp_path, reference_cache, capsys
):
    rc, verdicts, report = canary(
        llamacpp_decoders, llamacpp_decoders.noeos, small_beir, tmp_path, reference_cache, *DETECT
    )
    out = capsys.readouterr().out
    assert rc == 1, out
    assert verdicts["vector_agreement"]["passed"] is False
    assert verdicts["vector_agreement"]["details"]["min"] < 0.5  # the last word instead of EOS
    assert verdicts["norm_agreement"]["passed"] is True  # norms alone do not show it
    assert causes(report) == [("special", "no_closing")], out
    assert "the server does not append the EOS token the model's tokenizer appends" in out, out
    assert "llama-cpp-python: the GGUF says not to add it" in out and "tokenizer.ggml.add_eos_token" in out, out
    # "" is zero tokens without the EOS: llama_decode fails
    assert verdicts["bad_input"]["details"]["empty_string"] == 500, verdicts["bad_input"]["details"]


def test_a_decoder_gguf_whose_pooling_type_says_mean_is_named(
    llamacpp_decoders, small_beir, tmp_path, reference_cache, capsys
):
    rc, verdicts, report = canary(
        llamacpp_decoders, llamacpp_decoders.mean, small_beir, tmp_path, reference_cache, *DETECT
    )
    out = capsys.readouterr().out
    assert rc == 1, out
    assert verdicts["vector_agreement"]["passed"] is False
    # the over-long probe also shows llama-cpp-python's cut after the EOS (every server of it has that)
    assert causes(report) == [("special", "cut"), ("pooling", "mean")], out
    assert "the server pools with MEAN (the contract's: last)" in out, out
    assert "set it to 3 (last) with gguf-py's gguf_set_metadata.py" in out, out
