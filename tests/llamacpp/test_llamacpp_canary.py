"""The embedding canary against real llama-cpp-python servers (started once per session, see conftest).

The faithful configuration (f32 GGUF, the model's mean pooling from the file, n_ctx/n_batch/n_ubatch at the
contract's 256 tokens; the server never normalizes, so the contract is the model's with ``--no-normalize``)
passes every check (the empty list's HTTP 500 is a warning), identity included although the server has
no /health; so does the f16 file, within every tolerance. Every other configuration fails
and the diagnosis names its cause with llama-cpp-python's remedy: the default server (no normalization, and it
keeps 512 tokens), a GGUF whose pooling type says
CLS (the server has no pooling setting) and ``--n_ctx 128``.
"""

from __future__ import annotations

import json

import pytest

from evalsuite.cli import main

from .conftest import KEY_ENV, SERVED_NAME

pytestmark = [pytest.mark.integration, pytest.mark.llamacpp, pytest.mark.xdist_group("llamacpp")]


# the variants' contract; fewer repeated requests (a whole-server fault shows in the first)
VARIANT = ("--no-normalize", "--canary-detect", "0.5")


def canary(url, dataset, out, cache, *extra):
    argv = ["canary", "--endpoint", url, "--dataset", str(dataset), "--device", "cpu"]
    rc = main([*argv, "--cache-dir", str(cache), "--out", str(out), *extra])
    report = json.loads((out / "canary.json").read_text())
    return rc, {v["check"]: v for v in report["verdicts"]}, report


def causes(report) -> list[tuple[str, object]]:
    [diagnosis] = report["diagnosis"]
    assert diagnosis["engine"] == "llama-cpp-python", diagnosis
    return [(c["factor"], c["value"]) for c in diagnosis["causes"]]


def test_the_faithful_configuration_passes_every_check(llamacpp_servers, small_beir, tmp_path, reference_cache, capsys):
    rc, verdicts, report = canary(llamacpp_servers.faithful, small_beir, tmp_path, reference_cache, "--no-normalize")
    out = capsys.readouterr().out
    assert rc == 0, out
    assert report["served_model"] == SERVED_NAME
    assert all(v["passed"] is not False for v in verdicts.values()), out
    # vLLM's tolerances (tests/vllm/test_vllm_canary.py)
    assert verdicts["vector_agreement"]["details"]["min"] >= 0.9999
    assert abs(verdicts["retrieval_agreement"]["details"]["metrics"]["ndcg@10"]["delta"]) <= 0.002
    # no /health: an engine-aware identity verdict, not a 404 failure
    identity = verdicts["identity"]
    assert "no health route" in identity["message"] and "llama-cpp-python serves none" in identity["message"]
    assert set(identity["details"]["health"].values()) == {404}
    # llama-cpp-python's one defect here: an empty list fails the decode with a 500 and an error object
    # (docs/engines.md); nothing comes back and the server keeps answering, so it is a warning, said on the console
    bad = verdicts["bad_input"]
    assert bad["details"]["empty_list"] == 500, bad
    assert "warning: empty list -> HTTP 500 (llama_decode returned -1)" in bad["message"], bad["message"]
    assert "warning: empty list -> HTTP 500" in out
    # the empty string is the reference's; the over-long text is cut after its [SEP], within the tolerance
    assert bad["details"]["empty_string"] == 200 and bad["details"]["empty_string_cosine"] >= 0.9999
    assert 0.99 <= bad["details"]["over_long"]["cosine"] < 0.9999, bad["details"]
    # issue 40's probes pass; llama.cpp's WPM tokenizer splits a long digit run its own way: a warning, not a failure
    stress = verdicts["stress_inputs"]
    assert stress["passed"] is True and not stress["details"]["broken"], stress["message"]
    assert stress["details"]["per_text"]["s_number"] < 0.99 and "s_number" in stress["details"]["warnings"][0]


def test_the_default_server_is_named_not_normalizing_with_llamacpps_remedy(
    llamacpp_servers, small_beir, tmp_path, reference_cache, capsys
):
    rc, verdicts, report = canary(llamacpp_servers.default, small_beir, tmp_path, reference_cache)
    out = capsys.readouterr().out
    assert rc == 1, out
    assert report["served_model"] == llamacpp_servers.default_model  # named by its GGUF path
    # identity gets past the missing /health and fails on the vector's norm (the contract normalizes)
    identity = verdicts["identity"]["message"]
    assert identity.startswith('identity: item #0 "identity probe": norm ') and "health" not in identity, identity
    assert verdicts["vector_agreement"]["passed"] is False
    assert causes(report) == [("max_length", 512), ("normalize", False)], out
    assert "cause: " in out and "the server does not normalize the vectors" in out, out
    assert "llama-cpp-python's server never L2-normalizes" in out, out


def test_an_f16_file_is_within_every_tolerance_behind_its_api_key(
    llamacpp_servers, small_beir, tmp_path, reference_cache, monkeypatch, capsys
):
    """The f16 GGUF's vectors are as close to the reference as the f32 file's (min cosine 0.999996 vs 0.999997
    here; largest departure 0.003, below the diagnosis's 0.02): no canary threshold, and no diagnosis tolerance, can
    name the precision (docs/engines.md). A quantized file can: test_llamacpp_precision.py (q4_0, min cosine 0.88)."""
    monkeypatch.setenv(KEY_ENV, llamacpp_servers.key)
    rc, verdicts, _ = canary(
        llamacpp_servers.f16, small_beir, tmp_path, reference_cache, "--no-normalize", "--api-key-env", KEY_ENV
    )
    out, err = capsys.readouterr()
    assert verdicts["auth"]["passed"] is True, verdicts["auth"]["message"]  # --api_key: 401 without it
    for text in (out, err, (tmp_path / "report.md").read_text(), (tmp_path / "canary.json").read_text()):
        assert llamacpp_servers.key not in text
    assert rc == 0, out
    assert 0.99999 <= verdicts["vector_agreement"]["details"]["min"] < 1.0, verdicts["vector_agreement"]["details"]


def test_add_eos_token_false_does_not_drop_berts_sep(llamacpp_servers):
    """A BERT (WPM) GGUF whose ``tokenizer.ggml.add_eos_token`` says false still gets [CLS] ... [SEP]: llama.cpp adds
    both whenever it adds special tokens (src/llama-vocab.cpp), so the closing-token loss a conversion causes
    for BPE/SentencePiece models cannot be served from the bundled BERT (test_llamacpp_decoder.py serves it from
    a BPE decoder). Its vectors are the faithful file's, and its tokenizer says so."""
    import httpx
    import numpy as np

    texts = ["how does a database commit a transaction", "hello"]
    got = {}
    for name in ("faithful", "nosep"):
        base = getattr(llamacpp_servers, name)
        body = httpx.post(f"{base}/embeddings", json={"input": texts, "model": SERVED_NAME}, timeout=60).json()
        got[name] = np.array([d["embedding"] for d in body["data"]])
        root = base.removesuffix("/v1")
        tokens = httpx.post(f"{root}/extras/tokenize", json={"input": "hello"}, timeout=60).json()["tokens"]
        assert tokens == [101, 7592, 102], (name, tokens)
    np.testing.assert_allclose(got["nosep"], got["faithful"], rtol=0, atol=1e-5)


def test_a_wrong_pooling_type_is_named(llamacpp_servers, small_beir, tmp_path, reference_cache, capsys):
    rc, _, report = canary(llamacpp_servers.cls, small_beir, tmp_path, reference_cache, *VARIANT)
    out = capsys.readouterr().out
    assert rc == 1, out
    # the over-long probe also shows llama-cpp-python's cut after [SEP] (every server of it has that)
    assert causes(report) == [("special", "cut"), ("pooling", "cls")], out
    assert "llama-cpp-python's server has no pooling setting" in out and "set it to 1 (mean)" in out


def test_a_context_below_the_contracts_max_length_is_named(
    llamacpp_servers, small_beir, tmp_path, reference_cache, capsys
):
    rc, _, report = canary(llamacpp_servers.short, small_beir, tmp_path, reference_cache, *VARIANT)
    out = capsys.readouterr().out
    assert rc == 1, out
    assert causes(report) == [("special", "cut"), ("max_length", 128)], out
    assert "llama-cpp-python: --n_ctx 256 --n_batch 256 --n_ubatch 256" in out


def test_the_length_ladder_names_an_odd_context_exactly(
    llamacpp_servers, small_beir, tmp_path, reference_cache, capsys
):
    """``--n_ctx 200``: llama-cpp-python keeps the first 200 tokens of each input (special tokens included), a length
    no fixed list holds; the ladder names it to the token, and the diagnosis then names it too."""
    rc, verdicts, report = canary(llamacpp_servers.odd, small_beir, tmp_path, reference_cache, *VARIANT)
    out = capsys.readouterr().out
    assert rc == 1, out
    ladder = verdicts["length_ladder"]
    assert ladder["passed"] is False, ladder["message"]
    assert (ladder["details"]["agrees"], ladder["details"]["departs"]) == (200, 201), ladder["details"]
    assert ladder["details"]["requests"] <= 12
    assert "the server truncates at 200 tokens (the contract's max_length: 256)" in ladder["message"]
    assert "llama-cpp-python: --n_ctx 256 --n_batch 256 --n_ubatch 256" in ladder["message"]
    assert ("max_length", 200) in causes(report), out
