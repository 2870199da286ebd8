"""The budget's `index` stage: the index as built (written by the ingest helper, a known share of it stale), read
through the audit's store and searched as deployed, charged against an independent brute-force search of the same
stored vectors scored with a plain loop."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from evalsuite.cli import main

from .conftest import DOC_PREFIX, RUN_ARGS, Ingest

pytestmark = pytest.mark.integration


def _budget(ingest: Ingest, index: Path, ids: Path, out: Path, *extra: str) -> int:
    return main(
        [
            "budget",
            "--dataset",
            str(ingest.dataset),
            *RUN_ARGS,
            "--index-uri",
            f"faiss:{index}",
            "--ids",
            str(ids),
            "--metrics",
            "ndcg@10,recall@10",
            "--out",
            str(out),
            *extra,
        ]
    )


def _ndcg10(ranked: list[str], rels: dict[str, int]) -> float:
    ideal = sum(
        g / math.log2(i + 2) for i, g in enumerate(sorted((r for r in rels.values() if r > 0), reverse=True)[:10])
    )
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if rels.get(d, 0) > 0)
    return dcg / ideal if ideal else 0.0


def _qrels(dataset: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in (dataset / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, r = line.split("\t")
        out.setdefault(q, {})[d] = int(r)
    return {q: r for q, r in out.items() if any(v > 0 for v in r.values())}


def _trec(path: Path) -> dict[str, list[str]]:
    rows: dict[str, list[tuple[float, str]]] = {}
    for line in path.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        rows.setdefault(q, []).append((-float(s), d))
    return {q: [d for _, d in sorted(r)] for q, r in rows.items()}


def test_stale_vectors_in_the_built_index_are_its_stages_loss(ingest: Ingest, tmp_path: Path) -> None:
    """A third of the chunks stale (made with CLS pooling): the index stage loses, by exactly what a brute-force
    search of the stored vectors loses against the reference's written run."""
    rows = list(range(0, len(ingest.ids), 3))
    v = ingest.vectors.copy()
    v[rows] = ingest.variant({"doc_prefix": DOC_PREFIX, "pooling": "cls", "dataset": str(ingest.dataset)}, rows)
    index, ids = ingest.write("budget-stale", v)
    out = tmp_path / "out"
    assert _budget(ingest, index, ids, out, "--gate", "ndcg@10[stage=index]:max_drop=0.01") == 1
    data = json.loads((out / "budget.json").read_text())
    stage = next(s for s in data["stages"] if s["name"] == "index")
    assert stage["skipped"] is None and stage["cost"]["index"] == "faiss IndexFlatIP"
    assert stage["measured"]["stored_vectors"] == len(ingest.ids)
    d = stage["delta"]["ndcg@10"]
    assert d["high"] < 0 and "the index as built" in data["sentence"]

    from evalsuite.encode.contract_encoder import ContractEncoder
    from evalsuite.run.pipeline import make_encoder, prepare
    from evalsuite.run.spec import RunSpec

    prepared = prepare(RunSpec.from_mapping({"doc_prefix": DOC_PREFIX, "dataset": str(ingest.dataset)}, source="t"))
    qrels = _qrels(ingest.dataset)
    qids = sorted(qrels)
    q = ContractEncoder(make_encoder(prepared), prepared.contract).embed_queries(
        [prepared.dataset.queries[i] for i in qids]
    )
    scores = q @ v.T
    stored = {qid: [ingest.ids[j] for j in np.argsort(-scores[i], kind="stable")[:100]] for i, qid in enumerate(qids)}
    reference = _trec(out / "runs" / "reference.trec")
    want = np.mean([_ndcg10(stored[qid], qrels[qid]) - _ndcg10(reference[qid], qrels[qid]) for qid in qids])
    assert d["value"] == pytest.approx(float(want), abs=1e-6)
    assert [g["verdict"] for g in data["gates"]] == ["fail"]


def test_an_honest_index_costs_nothing_measurable(ingest: Ingest, tmp_path: Path) -> None:
    index, ids = ingest.write("budget-honest", ingest.vectors)
    out = tmp_path / "out"
    assert _budget(ingest, index, ids, out) == 0
    stage = next(s for s in json.loads((out / "budget.json").read_text())["stages"] if s["name"] == "index")
    for metric in ("ndcg@10", "recall@10"):
        assert stage["delta"][metric]["low"] <= 0 <= stage["delta"][metric]["high"]
        assert abs(stage["delta"][metric]["value"]) < 0.005


def test_an_index_of_another_dimension_is_a_typed_error(
    ingest: Ingest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index, ids = ingest.write("budget-dim", ingest.vectors)
    assert _budget(ingest, index, ids, tmp_path / "out", "--dim", "128") == 2
    err = capsys.readouterr().err
    assert "budget stage 'index'" in err and "stores 384-dimension vectors but the deployment declares 128" in err
    assert not (tmp_path / "out").exists()
