"""Late interaction: MaxSim against loops, token vectors against the model's hidden states, MaxSim re-ranking with
the memory per document, and a served token_embed output compared token by token."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.retrieval.maxsim import maxsim, maxsim_many
from evalsuite.testing.builders import run_argv


def test_maxsim_is_the_sum_of_each_query_tokens_best_match():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(3, 4))
    docs = [rng.normal(size=(n, 4)) for n in (5, 1, 7)]
    naive = [sum(max(float(qi @ dj) for dj in d) for qi in q) for d in docs]
    assert [maxsim(q, d) for d in docs] == pytest.approx(naive, rel=1e-5)
    assert maxsim_many(q, docs).tolist() == pytest.approx(naive, rel=1e-5)
    with pytest.raises(SpecError, match="token matrices"):
        maxsim(q, rng.normal(size=(2, 5)))


@pytest.fixture(scope="module")
def info(late_model_dir):
    from evalsuite.model import resolve_model

    return resolve_model(str(late_model_dir))


def encoder(info, **kw):
    from evalsuite.encode.tokens import TokenEncoder, build_late_contract

    return TokenEncoder(info, build_late_contract(info, **kw), device="cpu", batch_size=2)


def test_token_vectors_are_the_hidden_states_of_the_kept_tokens(info, late_model_dir):
    import torch
    from transformers import AutoModel, AutoTokenizer

    texts = ["why does bread dough rise", "a team scores", "the moon orbits the planet and the sun"]
    tok = AutoTokenizer.from_pretrained(str(late_model_dir))
    model = AutoModel.from_pretrained(str(late_model_dir)).eval()
    for policy, cut in (("keep", slice(None)), ("drop", slice(1, -1)), ("cls", slice(0, -1))):
        got = encoder(info, special_tokens=policy).encode(texts)
        for text, m in zip(texts, got, strict=True):
            enc = tok(text, return_tensors="pt")
            with torch.no_grad():
                h = torch.nn.functional.normalize(model(**enc).last_hidden_state[0], dim=-1).numpy()
            assert m.shape == h[cut].shape
            assert np.abs(m - h[cut]).max() < 1e-5


def test_projection_from_a_state_dict_in_the_model_directory(info, late_model_dir):
    import torch

    w, b = torch.randn(8, info.hidden_size), torch.randn(8)
    torch.save({"weight": w, "bias": b}, late_model_dir / "colbert_linear.pt")
    plain = encoder(info, special_tokens="keep", normalize=False).encode(["bread dough"])[0]
    proj = encoder(info, special_tokens="keep", normalize=False, projection="colbert_linear.pt")
    assert proj.contract.dim == 8
    got = proj.encode(["bread dough"])[0]
    assert np.abs(got - (plain @ w.numpy().T + b.numpy())).max() < 1e-4
    from evalsuite.base.errors import ModelError

    with pytest.raises(ModelError, match="not found in the model directory"):
        encoder(info, projection="../elsewhere.pt")


def test_late_reranking_reports_quality_and_memory(info, tiny_model_dir, small_beir):
    from evalsuite.late.evaluate import evaluate_late
    from evalsuite.run.pipeline import run
    from evalsuite.run.spec import RunSpec

    first = run(RunSpec(model=str(tiny_model_dir), dataset=str(small_beir), device="cpu", use_cache=False))
    enc = encoder(info)
    result = evaluate_late(first, enc, [3, 6])
    assert [s.depth for s in result.stages] == [3, 6]
    ds = first.dataset
    # memory: kept tokens x dim x 2 bytes (float16 storage) of every candidate document, computed independently
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(info.path))
    candidates = list(dict.fromkeys(d for q in ds.query_ids for d in list(first.ranking[q])[:6]))
    tokens = [len(tok(ds.corpus[d])["input_ids"]) - 2 for d in candidates]
    assert result.memory.documents == len(candidates)
    assert result.memory.tokens_mean == pytest.approx(np.mean(tokens))
    assert result.memory.bytes_max == max(tokens) * info.hidden_size * 2
    assert result.memory.single_vector_bytes == 4 * first.contract.dim
    # the reranked order at full depth is MaxSim's order
    q = ds.query_ids[0]
    qt = enc.encode([ds.queries[q]], role="query")[0]
    scores = {d: maxsim(qt, enc.encode([ds.corpus[d]])[0]) for d in first.ranking[q]}
    assert list(result.stages[1].ranking[q]) == sorted(scores, key=lambda d: (-scores[d], d))
    report = result.to_dict()
    assert (
        report["memory"]["bytes_per_token"] == info.hidden_size * 2 and "KiB per document" in result.memory.describe()
    )


def test_served_token_embed_compared_token_by_token(info, httpserver):
    from werkzeug import Response

    from evalsuite.encode.endpoint import EndpointConfig, EndpointEncoder
    from evalsuite.encode.response import Expectation, IndexMismatch
    from evalsuite.late.served import compare_tokens, fetch_token_embeddings

    ref_enc = encoder(info)
    keep_all = encoder(info, special_tokens="keep")
    mode = {"keep": False, "index": False}

    def answer(request):
        body = json.loads(request.data)
        assert body["task"] == "token_embed"
        mats = (keep_all if mode["keep"] else ref_enc).encode(body["input"])
        data = [{"index": i, "object": "pooling", "data": m.tolist()} for i, m in enumerate(mats)]
        if mode["index"]:
            data[0]["index"] = 1
        return Response(json.dumps({"data": data}), 200, content_type="application/json")

    httpserver.expect_request("/pooling", method="POST").respond_with_handler(answer)
    texts = ["why does bread dough rise", "a team scores"]
    http = EndpointEncoder(EndpointConfig(httpserver.url_for("/v1"), timeout=10), Expectation(dim=1, normalized=False))
    try:
        reference = ref_enc.encode(texts)
        agreement = compare_tokens(fetch_token_embeddings(http, texts, info.hidden_size), reference)
        assert agreement.passed(0.999) and agreement.min_cosine > 0.9999
        mode["keep"] = True  # a server that keeps [CLS] and [SEP]
        agreement = compare_tokens(fetch_token_embeddings(http, texts, info.hidden_size), reference)
        assert not agreement.passed(0.999)
        assert "token counts differ for 2 of 2" in agreement.describe() and "special tokens" in agreement.describe()
        mode["index"] = True
        with pytest.raises(IndexMismatch, match="repeated"):
            fetch_token_embeddings(http, texts, info.hidden_size)
    finally:
        http.close()


def test_late_cli(late_model_dir, tiny_model_dir, small_beir, tmp_path, capsys):
    import argparse

    from evalsuite.jobs import LATE, add_job

    parser = argparse.ArgumentParser(prog="evalsuite")
    add_job(parser.add_subparsers(dest="command"), LATE)
    args = parser.parse_args(
        run_argv(
            str(tiny_model_dir),
            str(small_beir),
            "--late-model",
            str(late_model_dir),
            "--rerank-depth",
            "4",
            "--late-storage-dtype",
            "float32",
            "--out",
            str(tmp_path),
            command="late",
        )
    )
    assert args.func(args) == 0
    assert "KiB per document" in capsys.readouterr().out
    report = json.loads((tmp_path / "late.json").read_text())
    assert report["memory"]["bytes_per_token"] == 32 * 4 and report["late_contract"]["special_tokens"] == "drop"
    assert report["depths"][0]["depth"] == 4 and report["depths"][0]["gain"]
    assert "## Memory per document" in (tmp_path / "report.md").read_text()


def test_late_cli_compares_a_served_token_output(
    late_model_dir, tiny_model_dir, small_beir, tmp_path, httpserver, capsys
):
    import argparse

    from werkzeug import Response

    from evalsuite.encode.tokens import TokenEncoder, build_late_contract
    from evalsuite.jobs import LATE, add_job
    from evalsuite.model import resolve_model

    info = resolve_model(str(late_model_dir))
    keep = {"specials": False}

    def answer(request):
        body = json.loads(request.data)
        enc = TokenEncoder(
            info, build_late_contract(info, special_tokens="keep" if keep["specials"] else "drop"), device="cpu"
        )
        data = [{"index": i, "data": m.tolist()} for i, m in enumerate(enc.encode(body["input"]))]
        return Response(json.dumps({"data": data}), 200, content_type="application/json")

    httpserver.expect_request("/pooling", method="POST").respond_with_handler(answer)
    parser = argparse.ArgumentParser(prog="evalsuite")
    add_job(parser.add_subparsers(dest="command"), LATE)

    def run(out):
        args = parser.parse_args(
            run_argv(
                str(tiny_model_dir),
                str(small_beir),
                "--late-model",
                str(late_model_dir),
                "--rerank-depth",
                "3",
                "--late-endpoint",
                httpserver.url_for("/v1"),
                "--out",
                str(out),
                command="late",
            )
        )
        return args.func(args), json.loads((out / "late.json").read_text())["served_tokens"]

    rc, served = run(tmp_path / "ok")
    assert rc == 0 and served["texts"] == 6 and served["min_cosine"] > 0.9999 and not served["count_mismatches"]
    keep["specials"] = True
    rc, served = run(tmp_path / "bad")
    assert rc == 1 and len(served["count_mismatches"]) == 6
    assert "FAIL  served token vectors: token counts differ for 6 of 6" in capsys.readouterr().out
