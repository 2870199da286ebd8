"""`evalsuite budget` end to end on the bundled model and data: real FAISS indexes, every charge checked against
an independent computation from the written runs, the telescoping sum, a faithful stage, typed errors."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from evalsuite.cli import main

from .conftest import per_query, read_qrels, read_run

pytestmark = pytest.mark.integration

# the production deployment: a Matryoshka cut, IVF-PQ (compression: PQ codes; approximate search: 2 of 8 lists)
DEPLOYED = ["--dim", "128", "--index", "ivfpq:nlist=8,nprobe=2,m=16,nbits=4"]


def _budget(out: Path, cache: Path, *extra: str) -> int:
    return main(["budget", *extra, "--cache-dir", str(cache), "--out", str(out)])


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory, reference_cache: Path) -> tuple[int, Path]:
    out = tmp_path_factory.mktemp("budget") / "deployed"
    code = _budget(
        out,
        reference_cache,
        *DEPLOYED,
        "--attribution",
        "shapley",
        "--gate",
        "ndcg@10[stage=ann]:max_drop=0.05",
        "--gate",
        "ndcg@10[stage=compression]:max_drop=0.01",
    )
    return code, out


def test_stages_in_pipeline_order_with_the_skipped_ones_named(deployed: tuple[int, Path]) -> None:
    _, out = deployed
    data = json.loads((out / "budget.json").read_text())
    assert data["schema_version"] == 1 and data["attribution"] == "shapley"
    names = [s["name"] for s in data["stages"]]
    assert names == ["precision", "served", "dimension", "compression", "ann", "index", "hybrid", "reranker"]
    skipped = {s["name"]: s["skipped"] for s in data["stages"] if s["skipped"]}
    assert set(skipped) == {"precision", "served", "index", "hybrid", "reranker"}
    assert "--endpoint" in skipped["served"] and "--index-uri" in skipped["index"]
    measured = [s for s in data["stages"] if not s["skipped"]]
    assert [s["config"]["dim"] for s in measured] == [128, 128, 128]
    assert [s["cost"]["index"].split(":")[0] for s in measured] == ["flat", "ivfpq", "ivfpq"]
    assert measured[1]["cost"]["index"].startswith("ivfpq:nlist=8,nprobe=8")  # every list probed: codes only
    assert measured[0]["cost"]["bytes_per_vector"] == 4 * 128 and measured[1]["cost"]["bytes_per_vector"] < 4 * 128


def test_each_charge_equals_an_independent_computation_from_the_written_runs(
    deployed: tuple[int, Path], minibeir_dir: Path
) -> None:
    """Bugs caught: a stage charged against the reference instead of the stage before, a delta of the wrong sign,
    metrics computed on another ranking than the one written out."""
    _, out = deployed
    data = json.loads((out / "budget.json").read_text())
    qrels = read_qrels(minibeir_dir / "qrels" / "test.tsv")
    chain = ["reference"] + [s["name"] for s in data["stages"] if not s["skipped"]]
    for metric in ("ndcg@10", "recall@10"):
        scores = {name: per_query(read_run(out / "runs" / f"{name}.trec"), qrels, metric) for name in chain}
        qids = sorted(scores["reference"])
        arrays = {name: np.array([s[q] for q in qids]) for name, s in scores.items()}
        assert data["reference"]["metrics"][metric] == pytest.approx(arrays["reference"].mean(), abs=1e-6)
        for prev, name in itertools.pairwise(chain):
            stage = next(s for s in data["stages"] if s["name"] == name)
            assert stage["metrics"][metric] == pytest.approx(arrays[name].mean(), abs=1e-6)
            assert stage["delta"][metric]["value"] == pytest.approx((arrays[name] - arrays[prev]).mean(), abs=1e-6)
            lost = float(np.mean(arrays[name] < arrays[prev] - 1e-9))
            assert stage["delta"][metric]["lost_share"] == pytest.approx(lost, abs=1e-9)
        total = (arrays[chain[-1]] - arrays["reference"]).mean()
        assert data["total"][metric]["value"] == pytest.approx(total, abs=1e-6)


def test_the_charges_add_up_to_the_total_under_both_rules(deployed: tuple[int, Path]) -> None:
    _, out = deployed
    data = json.loads((out / "budget.json").read_text())
    measured = [s for s in data["stages"] if not s["skipped"]]
    for metric, total in data["total"].items():
        assert abs(sum(s["delta"][metric]["value"] for s in measured) - total["value"]) < 1e-9
        assert abs(sum(s["shapley"][metric]["value"] for s in measured) - total["value"]) < 1e-9
        assert total["low"] <= total["value"] <= total["high"]


def test_the_answer_comes_first_and_the_gates_judge_their_stage(deployed: tuple[int, Path]) -> None:
    code, out = deployed
    data = json.loads((out / "budget.json").read_text())
    assert code == 1  # the compression's budget fails
    verdicts = {g["stage"]: g["verdict"] for g in data["gates"]}
    assert verdicts == {"ann": "pass", "compression": "fail"}
    comp = next(s for s in data["stages"] if s["name"] == "compression")
    gate = next(g for g in data["gates"] if g["stage"] == "compression")["outcome"]
    assert gate["delta"] == pytest.approx(
        comp["delta"]["ndcg@10"]["value"]
    )  # against the stage before, not the reference
    md = (out / "report.md").read_text()
    sentence = data["sentence"]
    assert md.splitlines()[2] == f"**{sentence}**"
    t = data["total"]["ndcg@10"]
    assert sentence.startswith(f"Production loses {abs(t['value']):.4f} ndcg@10 against the reference")
    # the PQ as built for 458 vectors (16 centroids per sub-quantizer need 624): the sentence names what is searched
    assert "PQ (m 16, 3 bits) compression" in sentence and sentence.endswith("(Shapley attribution).")
    assert any("nbits 4 -> 3" in n for n in data["notes"])
    worst = min((s for s in data["stages"] if not s["skipped"]), key=lambda s: s["shapley"]["ndcg@10"]["value"])
    assert worst["name"] == "compression" and "fix first: the compression" in sentence
    html = (out / "report.html").read_text()
    assert f"<p><strong>{sentence.replace('->', '-&gt;')}</strong></p>" in html and re.search(
        r'<img src="data:image/png;base64,[A-Za-z0-9+/=]{2000,}', html
    )
    assert all(f"<td>{name}</td>" in html for name in ("reference", "dimension", "compression", "ann", "production"))


def test_a_faithful_stage_shows_a_ci_holding_zero(tmp_path: Path, reference_cache: Path) -> None:
    """HNSW searching with ef as large as the corpus (458 documents) finds the exact neighbours: no loss."""
    code = _budget(
        tmp_path / "out", reference_cache, "--index", "hnsw:M=32,efc=200,ef=458", "--metrics", "ndcg@10,recall@10"
    )
    assert code == 0
    data = json.loads((tmp_path / "out" / "budget.json").read_text())
    ann = next(s for s in data["stages"] if s["name"] == "ann")
    for metric in ("ndcg@10", "recall@10"):
        d = ann["delta"][metric]
        assert d["low"] <= 0 <= d["high"] and abs(d["value"]) < 0.005
    assert "nothing measurable in the HNSW" in data["sentence"]


@pytest.mark.parametrize(
    ("argv", "stage", "hint"),
    [
        (["--dim", "1000"], "dimension", "pass --dim 384 or less"),
        (["--dim", "128", "--index", "ivfpq:nlist=8,m=7"], "compression", "does not divide the dimension 128"),
        (["--index-uri", "faiss:/nonexistent/index.faiss"], "index", "--index-uri"),
    ],
)
def test_a_stage_that_cannot_be_built_is_a_typed_error_and_writes_nothing(
    argv: list[str], stage: str, hint: str, tmp_path: Path, reference_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _budget(tmp_path / "out", reference_cache, *argv)
    err = capsys.readouterr().err
    assert code == 2 and f"budget stage '{stage}'" in err and hint in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*"))


def test_a_gate_on_an_unknown_stage_is_rejected_at_parse_time(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["budget", "--gate", "ndcg@10[stage=quantization]:max_drop=0.01"])
    assert exc.value.code == 2 and "stage 'quantization' is not one of" in capsys.readouterr().err


def test_choose_names_the_cheapest_setting_non_inferior_to_the_reference(tmp_path: Path, reference_cache: Path) -> None:
    """The declared HNSW with a tiny ef fails; SQ8 and an HNSW searching the whole corpus, at the same 128
    dimensions, stay within 0.1 of the reference; SQ8 is the cheaper (128 bytes per vector against 592.57)."""
    out = tmp_path / "out"
    argv = ["--dim", "128", "--index", "hnsw:M=8,ef=4", "--metrics", "ndcg@10", "--choose", "ndcg@10:non_inferior=0.1"]
    argv += ["--alternative", "index=hnsw:M=8,ef=458", "--alternative", "index=sq8"]
    assert _budget(out, reference_cache, *argv) == 0
    data = json.loads((out / "budget.json").read_text())
    choice = data["choice"]
    cells = {c["name"]: c for c in choice["cells"]}
    assert list(cells) == ["production", "index=hnsw:M=8,efc=40,ef=458", "index=sq8"]
    assert cells["production"]["decision"] != "pass"
    assert cells["index=sq8"]["decision"] == cells["index=hnsw:M=8,efc=40,ef=458"]["decision"] == "pass"
    assert cells["index=sq8"]["cost"] == 128 < cells["index=hnsw:M=8,efc=40,ef=458"]["cost"]
    assert choice["chosen"] == "index=sq8" and choice["base"]["name"] == "reference"
    assert choice["confidence"] == pytest.approx(1 - 0.05 / 3)
    dimension = next(
        s for s in data["stages"] if s["name"] == "dimension"
    )  # exact search over the same vectors: ef 458 comes close
    assert cells["index=hnsw:M=8,efc=40,ef=458"]["value"] == pytest.approx(dimension["metrics"]["ndcg@10"], abs=0.005)
    assert "## Choice" in (out / "report.md").read_text() and "index=sq8 (chosen)" in (out / "report.html").read_text()
