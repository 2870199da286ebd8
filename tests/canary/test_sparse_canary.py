"""The sparse canary (`evalsuite canary --endpoint URL --retrieval sparse`) against a real HTTP server on loopback
that answers in vLLM's ``/pooling`` ``token_classify`` shape and in TEI's ``/embed_sparse`` shape, from the tiny
BGE-M3-shaped model's own per-token scores (``sparse_linear`` before the ReLU, the special tokens included): served
faithfully (ReLU, BOS and EOS cut for vLLM; max per token id, specials out for TEI) or transformed by one fault.

The faithful server passes every check; each fault fails a check, and the diagnosis names it: the special tokens
kept, the ReLU missing, weights summed per token id, a dense vector served (mteb#4761's class), another pruning
depth. The reference run the retrieval check compares with equals `evalsuite run --retrieval sparse`'s metrics."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from evalsuite.canary.runner import run_sparse_canary
from evalsuite.canary.sparse.context import make_sparse_context
from evalsuite.canary.sparse.registry import SPARSE_CHECKS
from evalsuite.canary.sparse.settings import SparseCanarySettings

METRICS = ("ndcg@10", "mrr@10")


@pytest.fixture(scope="module")
def bgem3(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from evalsuite.testing.tiny_sparse import write_tiny_bgem3

    return write_tiny_bgem3(tmp_path_factory.mktemp("bgem3-canary") / "m")


@pytest.fixture(scope="module")
def prepared(bgem3, canary_dataset) -> Any:
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    spec = RunSpec(
        model=str(bgem3),
        dataset=str(canary_dataset),
        device="cpu",
        use_cache=False,
        metrics=METRICS,
        retrieval="sparse",
    )
    return prepare(spec)


class SparseFaultServer:
    """What the tiny model's true per-token scores become on the way out, per fault (``fault``, set by a test)."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.fault = ""
        self.specials = encoder.special_ids()
        self.hidden = 0

    def weights(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        ((ids, raw),) = self.encoder.token_scores([text])
        return ids, raw

    def vllm(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            ids, raw = self.weights(text)
            w = np.maximum(raw, 0.0)
            if self.fault == "no_relu":
                w = raw
            elif self.fault == "dense":
                out.append(np.resize(raw, self.hidden).tolist())  # one vector of the hidden size per text
                continue
            elif self.fault == "top_k":  # only the 3 largest token ids' weights left, the others zeroed
                keep = _top_ids(ids, w, self.specials, 3)
                w = np.where(np.isin(ids, keep), w, 0.0)
            out.append((w if self.fault == "specials" else w[1:-1]).tolist())  # vLLM cuts BOS and EOS
        return out

    def tei(self, texts: list[str]) -> list[Any]:
        out: list[Any] = []
        for text in texts:
            ids, raw = self.weights(text)
            if self.fault == "dense":
                out.append(np.resize(raw, self.hidden).tolist())
                continue
            if self.fault == "scaled":  # a fault no declared departure explains: every weight half as large again
                raw = raw * 1.5
            best = _lexical(
                ids,
                raw,
                set() if self.fault == "specials" else self.specials,
                relu=self.fault != "no_relu",
                summed=self.fault == "summed",
            )
            if self.fault == "top_k":
                best = {i: best[i] for i in sorted(best, key=lambda i: (-best[i], i))[:3]}
            out.append([{"index": i, "value": w} for i, w in best.items()][::-1])  # any order
        return out

    def handler(self, request: Any) -> Any:
        from werkzeug import Response

        body = json.loads(request.data)
        if request.path == "/pooling":
            texts = body["input"]
            if not texts:
                return self._empty({"object": "list", "data": []})
            data = [{"index": i, "object": "pooling", "data": w} for i, w in enumerate(self.vllm(texts))]
            return Response(json.dumps({"object": "list", "data": data}), 200, content_type="application/json")
        texts = body["inputs"]
        if not texts:
            return self._empty([])
        return Response(json.dumps(self.tei(texts)), 200, content_type="application/json")

    def _empty(self, payload: object) -> Any:
        from werkzeug import Response

        if self.fault == "server_error_on_empty":
            return Response("boom", 500)
        return Response(json.dumps(payload), 200, content_type="application/json")


def _lexical(ids: np.ndarray, raw: np.ndarray, drop: set[int], *, relu: bool, summed: bool) -> dict[int, float]:
    """What a server makes of one text's per-token scores, written out as a loop (independent of the canary's
    own transforms): ReLU or not, the ``drop`` ids left out, one weight per id (the max, or the sum), zeros out."""
    out: dict[int, float] = {}
    for i, x in zip(ids.tolist(), raw.tolist(), strict=True):
        w = max(x, 0.0) if relu else x
        if i in drop:
            continue
        out[i] = out.get(i, 0.0) + w if summed else max(out.get(i, -np.inf), w)
    return {i: float(w) for i, w in sorted(out.items()) if w != 0}


def _top_ids(ids: np.ndarray, w: np.ndarray, specials: set[int], k: int) -> list[int]:
    """An independent top-k: each id's largest weight, specials out, the k largest (ties: the lower id)."""
    best: dict[int, float] = {}
    for i, x in zip(ids.tolist(), w.tolist(), strict=True):
        if i not in specials and x > 0:
            best[i] = max(best.get(i, 0.0), x)
    return sorted(best, key=lambda i: (-best[i], i))[:k]


@pytest.fixture(scope="module")
def server_encoder(bgem3, prepared) -> Any:
    from evalsuite.encode.sparse import SparseEncoder
    from evalsuite.model import resolve_model

    return SparseEncoder.of(
        resolve_model(str(bgem3)),
        max_length=prepared.contract.max_length,
        device="cpu",
        batch_size=8,
        trust_remote_code=False,
    )


@pytest.fixture
def server(httpserver, server_encoder, prepared) -> SparseFaultServer:
    fake = SparseFaultServer(server_encoder)
    fake.hidden = int(prepared.model.hidden_size)
    httpserver.expect_request("/pooling", method="POST").respond_with_handler(fake.handler)
    httpserver.expect_request("/embed_sparse", method="POST").respond_with_handler(fake.handler)
    return fake


def canary(httpserver, prepared, api: str, **settings: Any) -> tuple[dict[str, Any], Any]:
    s = SparseCanarySettings(endpoint=httpserver.url_for("/v1"), api=api, timeout=10, sample=8, **settings)
    outcome = run_sparse_canary(make_sparse_context(s, prepared))
    return {v.check: v for v in outcome.verdicts}, outcome


@pytest.mark.parametrize("api", ["vllm", "tei"])
def test_a_faithful_server_passes_every_check(server, httpserver, prepared, api, tmp_path) -> None:
    from evalsuite.canary.report import write_canary_reports
    from evalsuite.run.pipeline import run

    verdicts, outcome = canary(httpserver, prepared, api)
    assert list(verdicts) == [c.name for c in SPARSE_CHECKS]
    assert all(v.passed for v in verdicts.values()), [v.message for v in verdicts.values()]
    assert outcome.diagnoses == ()
    tokens = verdicts["token_agreement"].details
    assert tokens["min_overlap"] == 1.0 and tokens["reference_active_ids"] > 50
    assert verdicts["weight_agreement"].details["max_abs_diff"] < 1e-5
    # the reference run is `evalsuite run --retrieval sparse`'s, computed by the run pipeline on its own
    independent = run(prepared.spec, prepared)
    for m, row in verdicts["sparse_retrieval"].details["metrics"].items():
        assert row["reference"] == pytest.approx(independent.metrics[m], abs=1e-6)
        assert row["delta"] == pytest.approx(0.0, abs=1e-6)
    assert "empty list of inputs -> HTTP 200 with no vectors" in verdicts["sparse_bad_input"].message
    assert "over-long text -> HTTP 200, the reference's vector" in verdicts["sparse_bad_input"].message
    paths = write_canary_reports(outcome, tmp_path)
    written = json.loads(paths["json"].read_text())
    assert written["family"] == "sparse" and written["passed"] is True and written["settings"]["api"] == api
    md = paths["markdown"].read_text()
    assert md.startswith("# Sparse canary: PASS") and "## Sparse retrieval agreement" in md


# each fault: the check it fails, what that message says, the cause the diagnosis names (and its value)
FAULTS = [
    ("vllm", "specials", "token_agreement", "20 weights served for a text", "specials", "BOS and EOS"),
    ("tei", "specials", "token_agreement", "served only: 0 '<s>'", "specials", "<s> (id 0)"),
    ("vllm", "no_relu", "token_agreement", "no ReLU", "relu", None),
    ("tei", "no_relu", "token_agreement", "no ReLU", "relu", None),
    ("tei", "summed", "weight_agreement", "max |served - reference| weight", "summed", None),
    ("vllm", "dense", "token_agreement", "a dense vector served where one weight per token", "dense_served", "hidden"),
    ("tei", "dense", "token_agreement", "mteb#4761", "dense_served", "hidden"),
    ("vllm", "top_k", "token_agreement", "reference only:", "top_k", 3),
    ("tei", "top_k", "token_agreement", "reference only:", "top_k", 3),
]


@pytest.mark.parametrize("api, fault, check, text, factor, value", FAULTS)
def test_each_fault_fails_and_the_diagnosis_names_it(
    server, httpserver, prepared, api, fault, check, text, factor, value
) -> None:
    server.fault = fault
    verdicts, outcome = canary(httpserver, prepared, api)
    assert outcome.passed is False
    assert verdicts[check].passed is False, verdicts[check].message
    if fault != "specials" or api != "vllm":
        assert text in verdicts[check].message, verdicts[check].message
    assert len(outcome.diagnoses) == 1
    (d,) = outcome.diagnoses
    assert [c.factor for c in d.causes] == [factor], d.sentence()
    if value == "hidden":
        assert d.causes[0].value == server.hidden and "mteb#4761" in d.sentence()
    elif isinstance(value, str):  # the special tokens named (the tiny vocabulary's <unk> among them)
        assert value in str(d.causes[0].value), d.sentence()
    elif value is not None:
        assert d.causes[0].value == value, d.sentence()
    line = d.sentence()
    assert line.startswith("cause: ") and "fix: " in line
    expected = {
        "specials": "special tokens kept",
        "relu": "ReLU missing",
        "summed": "summed instead of max-pooled",
        "dense_served": "a dense vector served",
        "top_k": "keeps only each text's 3 largest",
    }[factor]
    assert expected in line
    triage = outcome.triage()
    assert any(link.first_broken and link.stage == d.causes[0].stage for link in triage), triage


def test_a_departure_nothing_explains_is_said_so_with_the_closest(server, httpserver, prepared) -> None:
    server.fault = "scaled"
    verdicts, outcome = canary(httpserver, prepared, "tei")
    assert verdicts["weight_agreement"].passed is False and verdicts["token_agreement"].passed is True
    (d,) = outcome.diagnoses
    assert d.causes == () and not d.explained
    assert d.sentence().startswith("cause: no sparse departure explains the served vectors")
    assert d.contract is not None and d.contract.min_overlap == 1.0 and d.contract.max_difference > 0.1
    assert "closest: " in d.sentence()


def test_a_server_error_on_bad_input_fails_that_check_only(server, httpserver, prepared) -> None:
    server.fault = "server_error_on_empty"
    verdicts, outcome = canary(httpserver, prepared, "tei")
    assert [c for c, v in verdicts.items() if v.passed is False] == ["sparse_bad_input"]
    assert "empty list of inputs -> HTTP 500" in verdicts["sparse_bad_input"].message
    assert outcome.diagnoses == ()  # the diagnosis reads the vectors; bad input is not one of its checks


def test_from_the_cli(server, httpserver, bgem3, canary_dataset, tmp_path, capsys) -> None:
    from evalsuite.cli import main

    from .conftest import canary_argv

    url = httpserver.url_for("/v1")
    argv = canary_argv(url, bgem3, canary_dataset, tmp_path / "ok", "--retrieval", "sparse", "--sparse-api", "tei")
    assert main([*argv, "--sparse-canary-sample", "4"]) == 0
    written = json.loads((tmp_path / "ok" / "canary.json").read_text())
    assert written["family"] == "sparse" and [v["check"] for v in written["verdicts"]] == [
        c.name for c in SPARSE_CHECKS
    ]
    server.fault = "summed"
    argv = canary_argv(url, bgem3, canary_dataset, tmp_path / "bad", "--retrieval", "sparse", "--sparse-api", "tei")
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "cause: weights summed instead of max-pooled per token id" in out
    assert "**<- first broken link**" in (tmp_path / "bad" / "report.md").read_text()
    # a dense-vector threshold means nothing here: a usage error naming it, nothing written
    argv = canary_argv(
        url, bgem3, canary_dataset, tmp_path / "usage", "--retrieval", "sparse", "--canary-min-cosine", "0.9"
    )
    assert main(argv) == 2
    assert "--canary-min-cosine" in capsys.readouterr().err and not (tmp_path / "usage").exists()


def test_from_the_python_front_door(server, httpserver, bgem3, canary_dataset, tmp_path, capsys) -> None:
    import evalsuite

    server.fault = "top_k"
    report = evalsuite.canary(
        httpserver.url_for("/v1"),
        bgem3,
        canary_dataset,
        retrieval="sparse",
        sparse_api="tei",
        sparse_canary_sample=4,
        device="cpu",
        use_cache=False,
        out=tmp_path,
    )
    assert capsys.readouterr().out == ""  # the front door prints nothing
    assert report.exit_status == 1 and "token_agreement" in report.failed
    data = report.to_dict()
    assert data["family"] == "sparse" and data["diagnosis"][0]["causes"][0]["factor"] == "top_k"
    assert report.to_json() == (tmp_path / "canary.json").read_text(encoding="utf-8")


def test_settings_refuse_what_does_not_apply() -> None:
    from evalsuite.base.errors import SpecError

    with pytest.raises(SpecError, match="--sparse-api 'grpc' is not valid"):
        SparseCanarySettings(endpoint="http://127.0.0.1:1/v1", api="grpc")
    with pytest.raises(SpecError, match="checks one --endpoint URL, got 2"):
        SparseCanarySettings.from_values({"endpoint": ["http://a:1/v1", "http://b:1/v1"]})
    with pytest.raises(SpecError, match="sparse canary weight_tol must be in"):
        SparseCanarySettings(endpoint="http://127.0.0.1:1/v1", weight_tol=-1.0)
    s = SparseCanarySettings.from_values(
        {"endpoint": ["http://a:1/v1"], "sparse_api": "tei", "canary_min_overlap": 0.5}
    )
    assert (s.api, s.min_rank_overlap, s.endpoint) == ("tei", 0.5, "http://a:1/v1")
