"""Reranker sweeps: axis parsing, planning, one first stage and one scoring for every depth, reranker cells."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from evalsuite.errors import SpecError
from evalsuite.rerank.run import RerankSpec
from evalsuite.rerank.sweep import MemoScorer, parse_vary, plan
from evalsuite.spec import RunSpec


def test_parse_vary_and_plan():
    vary = parse_vary(["depth=2,4,6", "rerank_dtype=float32,bfloat16", "pooling=cls"])
    assert vary == {"depth": (2, 4, 6), "rerank_dtype": ("float32", "bfloat16"), "pooling": ("cls",)}
    cells = plan(vary, RunSpec(pooling="mean"), RerankSpec(depth=6))
    assert [c.name for c in cells] == ["base", "depth=2", "depth=4", "rerank_dtype=bfloat16", "pooling=cls"]
    for bad, msg in (
        (["depth=0"], "must be >= 1"),
        (["size=1"], "AXIS one of"),
        (["rerank_dtype=int8"], "not one of"),
        (["depth=2", "depth=3"], "given twice"),
    ):
        with pytest.raises(SpecError, match=msg):
            parse_vary(bad)


def test_memo_scorer_scores_each_pair_once():
    calls = []

    def score(pairs, labels):
        calls.append(list(pairs))
        return np.array([len(q) + len(d) for q, d in pairs], dtype=float)

    memo = MemoScorer(score)
    assert memo([("a", "bb"), ("c", "d")], ["1", "2"]).tolist() == [3.0, 2.0]
    assert memo([("c", "d"), ("e", "fff")], ["2", "3"]).tolist() == [2.0, 4.0]
    assert calls == [[("a", "bb"), ("c", "d")], [("e", "fff")]] and memo.scored == 3


def test_rerank_sweep_cli(tiny_model_dir, cross_encoder_dir, small_beir, tmp_path, monkeypatch, capsys):
    from evalsuite.rerank import run as run_module
    from evalsuite.rerank.cli import register

    first_stages = []
    real = run_module.run_first_stage

    def counting(spec, depths):
        first_stages.append(spec.pooling)
        return real(spec, depths)

    monkeypatch.setattr(run_module, "run_first_stage", counting)
    rerankers = []
    real_make = run_module.make_reranker

    def make(info, contract, spec, rspec):
        rerankers.append(real_make(info, contract, spec, rspec))
        return rerankers[-1]

    monkeypatch.setattr(run_module, "make_reranker", make)
    parser = argparse.ArgumentParser(prog="evalsuite")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        [
            "rerank-sweep",
            "--model",
            str(tiny_model_dir),
            "--dataset",
            str(small_beir),
            "--device",
            "cpu",
            "--no-cache",
            "--reranker",
            str(cross_encoder_dir),
            "--rerank-depth",
            "6",
            "--vary",
            "depth=2,4",
            "--vary",
            "rerank_max_length=16",
            "--vary",
            "pooling=cls",
            "--out",
            str(tmp_path),
        ]
    )
    assert args.func(args) == 0
    assert first_stages == [None, "cls"]  # one first stage for the base and every depth; one for pooling=cls
    cells = {c["cell"]: c for c in json.loads((tmp_path / "rerank_sweep.json").read_text())["cells"]}
    assert list(cells) == ["base", "depth=2", "depth=4", "rerank_max_length=16", "pooling=cls"]
    assert cells["depth=2"]["depth"] == 2 and cells["rerank_max_length=16"]["reranker_contract"]["max_length"] == 16
    assert cells["pooling=cls"]["first_stage_contract"]["pooling"] == "cls"
    assert cells["depth=2"]["first_stage"] == cells["base"]["first_stage"]  # the same first stage
    for c in cells.values():
        for d in c["vs_base"]:
            assert d["delta"] == pytest.approx(
                c["reranked"][d["metric"]] - cells["base"]["reranked"][d["metric"]], abs=2e-6
            )
    assert all(d["delta"] == 0 for d in cells["base"]["vs_base"])
    # two rerankers: the base one scores the deepest depth's pairs once, plus only the pooling=cls cell's new pairs;
    # the max-length one scores the base depth's pairs with pairs cut to 16 tokens
    base, short = rerankers
    n_queries = 3  # small_beir keeps the 3 queries that have a relevant document
    assert short.contract.max_length == 16 and short.stats.pairs == 6 * n_queries and short.stats.truncated > 0
    assert 6 * n_queries <= base.stats.pairs <= 12 * n_queries
    assert (tmp_path / "report.md").read_text().startswith("# evalsuite reranker sweep")
