"""Slice membership and slice metrics, against hand computations.

The tiny BERT's tokenizer reads each word of these texts ("index", "query": both in its vocabulary) as one token and adds [CLS] and [SEP], so a
text of ``k`` words has ``k + 2`` tokens: every length below is known by hand.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.run.pipeline import prepare
from evalsuite.run.spec import RunSpec
from evalsuite.slicing import build_slice_index, parse_selector
from evalsuite.slicing.tokens import count_tokens

REPO = Path(__file__).resolve().parents[2]
DOC_WORDS = {"d1": 5, "d2": 40, "d3": 100, "d4": 200, "d5": 300, "d6": 600, "d7": 10}


def _words(n, word="index"):
    return " ".join([word] * n)


@pytest.fixture
def crafted(make_beir, tmp_path):
    docs = [
        {"_id": d, "title": "", "text": _words(n), "domain": "legal" if d in ("d3", "d5") else "medical"}
        for d, n in DOC_WORDS.items()
    ]
    queries = [  # (id, words, topic, relevant documents); d7 is a hard negative (grade 0) everywhere
        ("q1", 3, "finance", ["d1"]),
        ("q2", 50, "finance", ["d1", "d3"]),
        ("q3", 8, "sports", ["d4"]),
        ("q4", 130, "sports", ["d5", "d1"]),
        ("q5", 600, "cooking", ["d6"]),
        ("q6", 1, "cooking", ["d2"]),
    ]
    qrels = [(q, d, 1 + (i == 0)) for q, _, _, rel in queries for i, d in enumerate(rel)]
    qrels += [(q, "d7", 0) for q, *_ in queries]
    return make_beir(
        tmp_path / "crafted",
        docs,
        [{"_id": q, "text": _words(n, "query"), "topic": t} for q, n, t, _ in queries],
        qrels,
    )


def _prepared(tiny_model_dir, dataset, **changes):
    return prepare(RunSpec(model=str(tiny_model_dir), dataset=str(dataset), device="cpu", use_cache=False, **changes))


def test_token_counts_are_words_plus_two(tiny_model_dir):
    assert count_tokens(tiny_model_dir, ["index " * 7, "query", ""]) == [9, 3, 2]


def test_membership_by_hand(tiny_model_dir, crafted):
    p = _prepared(tiny_model_dir, crafted)
    assert p.contract.max_length == 64
    index = build_slice_index(p.dataset, p.contract, p.model.tokenizer_path)
    prof = index.profiles
    assert {q: prof[q].qlen for q in prof} == {"q1": 5, "q2": 52, "q3": 10, "q4": 132, "q5": 602, "q6": 3}
    # the longest relevant (grade >= 1) document: the 10-word hard negative d7 never counts
    assert {q: prof[q].doclen for q in prof} == {"q1": 7, "q2": 102, "q3": 202, "q4": 302, "q5": 602, "q6": 42}

    def members(text):
        return set(index.members(parse_selector(text)))

    assert members("doclen<=32") == {"q1"}
    assert members("doclen=33..128") == {"q2", "q6"}
    assert members("doclen=129..256") == {"q3"}
    assert members("doclen=257..512") == {"q4"}
    assert members("doclen>512") == {"q5"}
    assert members("doclen=truncated") == {"q2", "q3", "q4", "q5"}  # over max_length 64
    assert members("qlen=truncated") == {"q4", "q5"}
    assert members("topic=finance") == {"q1", "q2"}
    assert members("doc.domain=legal") == {"q2", "q4"}  # any relevant document
    assert members("doc.domain=medical") == {"q1", "q2", "q3", "q4", "q5", "q6"}
    # topic reported by default (the queries carry it), doc fields only when asked
    assert [s.text for s in index.reported()] == [
        "qlen<=32",
        "qlen=33..128",
        "qlen=129..256",
        "qlen>512",
        "qlen=truncated",
        "doclen<=32",
        "doclen=33..128",
        "doclen=129..256",
        "doclen=257..512",
        "doclen>512",
        "doclen=truncated",
        "topic=cooking",
        "topic=finance",
        "topic=sports",
    ]


def test_lengths_count_the_rendered_text(tiny_model_dir, crafted):
    p = _prepared(tiny_model_dir, crafted, query_prefix="bread bread ", doc_prefix="oven ")
    index = build_slice_index(p.dataset, p.contract, p.model.tokenizer_path)
    assert index.profiles["q1"].qlen == 7 and index.profiles["q1"].doclen == 8  # bug caught: counting raw text


def test_slice_table_is_the_mean_over_the_slice(tiny_model_dir, crafted):
    p = _prepared(tiny_model_dir, crafted, slice_by=("topic", "doc.domain"))
    index = build_slice_index(p.dataset, p.contract, p.model.tokenizer_path, p.spec.slice_by)
    per_query = {
        "ndcg@10": {"q1": 0.1, "q2": 0.5, "q3": 0.9, "q4": 0.2, "q5": 0.0, "q6": 1.0},
        "recall@10": {"q1": 1.0, "q2": 0.5, "q3": 0.0, "q4": 1.0, "q5": 1.0, "q6": 0.0},
    }
    rows = {r.slice: r for r in index.table(per_query)}
    assert rows["topic=finance"].n_queries == 2
    assert rows["topic=finance"].metrics["ndcg@10"] == pytest.approx((0.1 + 0.5) / 2)
    assert rows["doclen=truncated"].metrics["recall@10"] == pytest.approx((0.5 + 0.0 + 1.0 + 1.0) / 4)
    assert rows["doc.domain=legal"].metrics["ndcg@10"] == pytest.approx((0.5 + 0.2) / 2)
    # the length buckets partition the queries: their n-weighted means give back the overall mean
    buckets = [r for s, r in rows.items() if s.startswith("doclen") and s != "doclen=truncated"]
    assert sum(r.n_queries for r in buckets) == 6
    assert sum(r.n_queries * r.metrics["ndcg@10"] for r in buckets) / 6 == pytest.approx(
        np.mean(list(per_query["ndcg@10"].values()))
    )


def test_unknown_slice_field_lists_the_known_ones(tiny_model_dir, crafted):
    p = _prepared(tiny_model_dir, crafted)
    with pytest.raises(SpecError, match=r"no metadata field 'domain'; known fields: topic, doc\.domain"):
        build_slice_index(p.dataset, p.contract, p.model.tokenizer_path, ("domain",))
    index = build_slice_index(p.dataset, p.contract, p.model.tokenizer_path)
    with pytest.raises(SpecError, match=r"no query has topic='fnance'; topic takes cooking, finance, sports"):
        index.check(parse_selector("topic=fnance"), "gate")


def test_a_real_run_reports_slices_that_match_a_hand_computation(tiny_model_dir, crafted, tmp_path, capsys):
    from evalsuite.cli import main

    out = tmp_path / "out"
    assert (
        main(
            [
                "run",
                "--model",
                str(tiny_model_dir),
                "--dataset",
                str(crafted),
                "--no-cache",
                "--device",
                "cpu",
                "--slice-by",
                "topic",
                "--slice-by",
                "doc.domain",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    per_query = results["per_query"]
    by_name = {s["slice"]: s for s in results["slices"]["slices"]}
    hand = {
        "topic=sports": ["q3", "q4"],
        "doclen=truncated": ["q2", "q3", "q4", "q5"],
        "doc.domain=legal": ["q2", "q4"],
        "qlen<=32": ["q1", "q3", "q6"],
    }
    for name, qids in hand.items():
        assert by_name[name]["n_queries"] == len(qids)
        for metric in ("ndcg@10", "recall@100"):
            expected = float(np.mean([per_query[metric][q] for q in qids]))
            assert by_name[name]["metrics"][metric] == pytest.approx(expected, abs=2e-6), (name, metric)
            row = next(line for line in printed.splitlines() if line.strip().startswith(name + " "))
            assert f"{by_name[name]['metrics'][metric]:.4f}" in row
    report = (out / "report.md").read_text()
    assert "## Slices" in report and "| topic=sports | 2* |" in report


def test_unknown_slice_by_is_a_usage_error_before_encoding(tiny_model_dir, crafted, tmp_path, capsys, monkeypatch):
    from evalsuite.cli import main
    from evalsuite.run import pipeline

    monkeypatch.setattr(pipeline, "run", lambda *a, **k: pytest.fail("encoded before the usage error"))
    assert (
        main(
            [
                "run",
                "--model",
                str(tiny_model_dir),
                "--dataset",
                str(crafted),
                "--no-cache",
                "--slice-by",
                "domain",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert (
        "--slice-by: the queries have no metadata field 'domain'; known fields: topic, doc.domain"
        in capsys.readouterr().err
    )


def test_the_fixture_run_shows_topic_and_length_slices(tiny_model_dir, minibeir_dir, tmp_path, capsys):
    from evalsuite.cli import main

    assert (
        main(
            [
                "run",
                "--model",
                str(tiny_model_dir),
                "--dataset",
                str(minibeir_dir),
                "--no-cache",
                "--device",
                "cpu",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    shown = {
        line.split()[0]
        for line in lines[lines.index("slices:") + 2 :]
        if line.startswith("  ") and not line.startswith("  *")
    }
    topics = {
        f"topic={t}"
        for t in (
            "astronomy",
            "cooking",
            "databases",
            "finance",
            "gardening",
            "music",
            "networking",
            "physiology",
            "railways",
            "sports",
        )
    }
    assert topics <= shown and "qlen<=32" in shown and any(s.startswith("doclen") for s in shown)


def test_slicing_loads_no_model_stack(tiny_model_dir, crafted):
    code = (
        "import sys; from evalsuite.run.pipeline import prepare; from evalsuite.run.spec import RunSpec; "
        "from evalsuite.run.slices import slice_index; "
        f"p = prepare(RunSpec(model={str(tiny_model_dir)!r}, dataset={str(crafted)!r})); "
        "slice_index(p); print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "[]"
