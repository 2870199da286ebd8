"""Reranker sweeps: the reranker's axes in the one registry, planning, one first stage and one scoring for every
depth, reranker cells, first-stage cells through the embedding sweep."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.rerank.twostage import MemoScorer
from evalsuite.sweep import parse_vary
from evalsuite.sweep.registry import declaration
from evalsuite.sweep.rerank_cells import parse_rerank_vary, plan
from evalsuite.testing.builders import run_argv


def test_reranker_axes_parse_with_the_one_vary_parser_and_plan():
    axes = parse_rerank_vary(["depth=2,4,6", "rerank_dtype=float32,bfloat16", "pooling=cls", "depth=4,8"])
    assert [(a.name, [v.value for v in a.values]) for a in axes] == [
        ("depth", [2, 4, 6, 8]),  # repeated axes merge, as in every sweep
        ("rerank_dtype", ["float32", "bfloat16"]),
        ("pooling", ["cls"]),
    ]
    cells = plan(axes, base_depth=6)
    assert [c.name for c in cells] == [
        "base",
        "depth=2",
        "depth=4",
        "depth=8",
        "rerank_dtype=float32",
        "rerank_dtype=bfloat16",
        "pooling=cls",
    ]
    for bad, msg in (
        (["depth=0"], "--vary depth: 0 is too small; it must be >= 1"),
        (["size=1"], "unknown axis 'size'"),
        (["rerank_dtype=int8"], "--vary rerank_dtype: 'int8' is not valid; choose from"),
        (["rerank_max_length=3"], "must be >= 4"),
        ([], "needs at least one --vary"),
    ):
        with pytest.raises(SpecError, match=msg):
            parse_rerank_vary(bad)


def test_an_embedding_sweep_refuses_the_reranker_axes():
    for item, stage in (("depth=10", "rerank depth"), ("rerank_dtype=bfloat16", "reranker")):
        with pytest.raises(SpecError, match=f"varies the {stage}; vary it with `evalsuite rerank-sweep`"):
            parse_vary([item])


def test_a_reranker_axis_sets_the_reranker_contract_field_it_declares(cross_encoder_dir):
    from evalsuite.model import resolve_model
    from evalsuite.rerank.contract import build_reranker_contract

    contract = build_reranker_contract(resolve_model(str(cross_encoder_dir)))
    assert declaration("rerank_dtype").apply_reranker(contract, "bfloat16") == contract.replace(dtype="bfloat16")
    assert declaration("rerank-max-length").apply_reranker(contract, 16) == contract.replace(max_length=16)
    with pytest.raises(SpecError, match="--vary rerank_dtype: varies the reranker, not the first stage"):
        declaration("rerank_dtype").apply(None, "bfloat16")
    with pytest.raises(SpecError, match="--vary pooling: varies the first stage, not the reranker"):
        declaration("pooling").apply_reranker(contract, "cls")


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
    from evalsuite.cli import build_parser
    from evalsuite.rerank import run as run_module
    from evalsuite.run import pipeline

    prepared_specs = []
    real = pipeline.prepare

    def counting(spec):
        prepared_specs.append(spec.pooling)
        return real(spec)

    monkeypatch.setattr(pipeline, "prepare", counting)
    rerankers = []
    real_make = run_module.make_reranker

    def make(info, contract, spec, rspec):
        rerankers.append(real_make(info, contract, spec, rspec))
        return rerankers[-1]

    monkeypatch.setattr(run_module, "make_reranker", make)
    args = build_parser().parse_args(
        run_argv(
            str(tiny_model_dir),
            str(small_beir),
            "--reranker",
            str(cross_encoder_dir),
            "--rerank-depth",
            "4,6",
            "--vary",
            "depth=2",
            "--vary",
            "rerank_max_length=16",
            "--vary",
            "pooling=cls",
            "--out",
            str(tmp_path),
            command="rerank-sweep",
        )
    )
    assert args.func(args) == 0
    assert prepared_specs == [None]  # one first stage, and pooling=cls through the same sweep's forward passes
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
