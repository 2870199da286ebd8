"""`evalsuite audit --endpoint URL` against the session's real Infinity servers (the loopback stand-in in
test_endpoint.py stays for its faults): the labelled queries go through the served deployment, as production's
query path does, and are searched in the index the reference built. The faithful server changes nothing; the CLS
deployment loses queries, and the audit's release gate fails with the drop measured against the exact reference."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalsuite.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("infinity")]
KEY_ENV = "EVALSUITE_AUDIT_INFINITY_KEY"


@pytest.fixture(scope="module")
def bundled_index(
    tmp_path_factory: pytest.TempPathFactory, minibeir_dir: Path, reference_cache: Path
) -> tuple[Path, Path, Path]:
    """The bundled corpus encoded by the reference (the session's embedding cache) in a flat FAISS file."""
    import faiss

    from evalsuite.encode.contract_encoder import ContractEncoder
    from evalsuite.run.pipeline import make_encoder, prepare
    from evalsuite.run.spec import RunSpec

    root = tmp_path_factory.mktemp("audit-infinity")
    cache = reference_cache
    prepared = prepare(RunSpec(dataset=str(minibeir_dir), device="cpu", cache_dir=str(cache)))
    ids = [str(d) for d in prepared.dataset.doc_ids]
    enc = ContractEncoder(make_encoder(prepared), prepared.contract)
    vectors = np.asarray(enc.embed_documents([prepared.dataset.corpus[d] for d in ids]), np.float32)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    faiss.write_index(index, str(root / "index.faiss"))
    (root / "ids.txt").write_text("\n".join(ids) + "\n")
    return root / "index.faiss", root / "ids.txt", cache


def _retrieval(out: Path) -> dict:
    data = json.loads((out / "audit.json").read_text())
    return next(v for v in data["index"]["verdicts"] if v["check"] == "retrieval")


def test_audit_queries_through_real_infinity_faithful_and_cls(
    bundled_index, infinity_servers, minibeir_dir: Path, tmp_path: Path, monkeypatch, capsys
):
    index, ids, cache = bundled_index
    base = ["audit", "--index", f"faiss:{index}", "--ids", str(ids), "--dataset", str(minibeir_dir)]
    base += ["--device", "cpu", "--cache-dir", str(cache), "--audit-gate", "ndcg@10:max_drop=0.01"]
    monkeypatch.setenv(KEY_ENV, infinity_servers["key"])
    good = ["--endpoint", infinity_servers["good"].url, "--api-key-env", KEY_ENV]
    assert main([*base, *good, "--out", str(tmp_path / "good")]) == 0, capsys.readouterr().out
    r = _retrieval(tmp_path / "good")
    assert r["details"]["encoded_by"] == "endpoint" and r["status"] == "PASS"
    for gate in r["details"]["gates"].values():  # Infinity's float path: the same rankings within noise
        assert abs(gate["delta"]) <= 0.005, gate

    rc = main([*base, "--endpoint", infinity_servers["cls"].url, "--out", str(tmp_path / "cls")])
    out = capsys.readouterr().out
    assert rc == 1, out
    r = _retrieval(tmp_path / "cls")
    g = r["details"]["gates"]["ndcg@10:max_drop=0.01"]
    assert r["status"] == "FAIL" and r["details"]["encoded_by"] == "endpoint"
    assert g["decision"] == "fail" and g["delta"] < -0.05  # CLS pooling costs about 0.09 nDCG@10 on this set
    assert infinity_servers["key"] not in out + json.dumps(json.loads((tmp_path / "good" / "audit.json").read_text()))
