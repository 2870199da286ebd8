"""`--endpoint URL`: the labelled queries encoded through a served endpoint (the production query path), on the
canary's loopback OpenAI-compatible server serving the tiny model: faithful (every delta 0), then pooling with CLS
(the index, built with mean pooling, loses queries under a release gate)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalsuite.cli import main


@pytest.fixture
def served(tiny_model_dir: Path) -> Iterator[Any]:
    from evalsuite.encode.local import LocalEncoder
    from evalsuite.model import resolve_model
    from tests.canary.fault_server import serving

    info = resolve_model(str(tiny_model_dir))
    encoders: dict[int, Any] = {}

    def get(max_length: int) -> Any:
        if max_length not in encoders:
            encoders[max_length] = LocalEncoder(info, device="cpu", max_length=max_length, progress=False)
        return encoders[max_length]

    with serving(get, info.hidden_size, info.default_max_length) as fs:
        yield fs


def test_queries_through_a_served_endpoint(served: Any, tiny_model_dir: Path, small_beir: Path, tmp_path: Path) -> None:
    import faiss

    from evalsuite.encode.contract_encoder import ContractEncoder
    from evalsuite.run.pipeline import make_encoder, prepare
    from evalsuite.run.spec import RunSpec

    prepared = prepare(RunSpec(model=str(tiny_model_dir), dataset=str(small_beir), device="cpu", use_cache=False))
    ids = [str(d) for d in prepared.dataset.doc_ids]
    enc = ContractEncoder(make_encoder(prepared), prepared.contract)
    vectors = np.asarray(enc.embed_documents([prepared.dataset.corpus[d] for d in ids]), np.float32)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    faiss.write_index(index, str(tmp_path / "i.faiss"))
    (tmp_path / "ids.txt").write_text("\n".join(ids) + "\n")
    base = ["audit", "--index", f"faiss:{tmp_path / 'i.faiss'}", "--ids", str(tmp_path / "ids.txt")]
    base += ["--model", str(tiny_model_dir), "--dataset", str(small_beir), "--device", "cpu", "--no-cache"]
    assert main([*base, "--endpoint", served.url, "--out", str(tmp_path / "ok")]) == 0
    data = json.loads((tmp_path / "ok" / "audit.json").read_text())
    r = next(v for v in data["index"]["verdicts"] if v["check"] == "retrieval")
    assert r["details"]["encoded_by"] == "endpoint" and r["status"] == "PASS"
    assert all(g["delta"] == 0.0 for g in r["details"]["gates"].values())  # the served query path is faithful
    assert served.bodies, "the queries went through the endpoint"
    served.pooling = "cls"  # the query path pools another way than the index was built
    gate = ("--audit-gate", "ndcg@10:max_drop=0.0")
    assert main([*base, "--endpoint", served.url, *gate, "--out", str(tmp_path / "bad")]) == 1
    bad = json.loads((tmp_path / "bad" / "audit.json").read_text())
    rb = next(v for v in bad["index"]["verdicts"] if v["check"] == "retrieval")
    assert rb["details"]["encoded_by"] == "endpoint"
    g = rb["details"]["gates"]["ndcg@10:max_drop=0.0"]
    assert rb["status"] == "FAIL" and g["decision"] == "fail" and g["delta"] < 0
    assert "queries that lost most" in rb["message"]  # the release gates' own explanation


def test_endpoint_client_options_without_an_endpoint_are_a_usage_error(tiny_model_dir: Path, tmp_path: Path, capsys):
    """Bug: --api-key-env accepted and ignored in silence when nothing is served (the audit runs local queries)."""
    argv = ["audit", "--index", f"faiss:{tmp_path / 'none.faiss'}", "--model", str(tiny_model_dir)]
    assert main([*argv, "--api-key-env", "SOME_KEY", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "--api-key-env set(s) how to call a served model, but no --endpoint" in err
    assert not (tmp_path / "out").exists()
