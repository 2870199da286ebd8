"""The axis registry: every axis is one declaration, and what the planner, the grid check and the
docs table say about an axis follows from it."""

import dataclasses
import pickle

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.contract import TRUNCATIONS, Contract
from evalsuite.sweep import (
    AXIS_NAMES,
    SWEEP_AXES,
    axis_table,
    declaration,
    parse_axis,
    parse_vary,
    plan_cells,
    plan_passes,
)
from evalsuite.sweep.axes import conflicts
from evalsuite.sweep.axis_kinds import ALL_STAGES, ChoiceAxis
from evalsuite.testing.builders import make_contract

BASE = make_contract(query_prefix="query: ", doc_prefix="passage: ", max_length=256)


def _fields(cls):
    return {f.name for f in dataclasses.fields(cls)}


def _stage_fields():
    from evalsuite.rerank.contract import RerankerContract

    return {"first_stage": _fields(Contract), "reranker": _fields(RerankerContract), "depth": {"depth"}}


FIRST_STAGE = [d for d in SWEEP_AXES if d.stage == "first_stage"]
# Which axes can need a forward pass of their own (written out independently of the declarations).
OWN_FORWARD_PASS = {
    "pooling": False,
    "query_prefix": True,
    "doc_prefix": True,
    "prefixes": True,
    "dtype": True,
    "max_length": True,
    "dim": False,
    "normalize": False,
    "index": False,
    "retrieval": False,
    "fusion": False,
    "fusion_k": False,
    "fusion_weight": False,
    "sparse_top_k": False,
    "depth": False,
    "rerank_max_length": False,
    "rerank_dtype": False,
}


def test_axes_are_the_declared_names_unique_and_in_order():
    names = [d.name for d in SWEEP_AXES]
    assert len(set(names)) == len(names)
    assert tuple(names) == AXIS_NAMES
    assert AXIS_NAMES == (
        "pooling",
        "query_prefix",
        "doc_prefix",
        "prefixes",
        "dtype",
        "max_length",
        "dim",
        "normalize",
        "index",
        "retrieval",
        "fusion",
        "fusion_k",
        "fusion_weight",
        "sparse_top_k",
        "depth",
        "rerank_max_length",
        "rerank_dtype",
    )
    assert declaration("max-length") is declaration("max_length") is not None
    assert declaration("colour") is None


@pytest.mark.parametrize("decl", SWEEP_AXES, ids=lambda d: d.name)
def test_every_axis_has_a_label_explanation_and_examples_that_parse(decl):
    assert decl.label.strip() and decl.explanation.strip() and decl.examples
    for example in decl.examples:
        axis = parse_axis(example)
        assert axis.name == decl.name and axis.declaration == decl and axis.values
        assert all(v.label for v in axis.values)
    assert set(decl.sets) <= _stage_fields()[decl.stage]


@pytest.mark.parametrize("decl", FIRST_STAGE, ids=lambda d: d.name)
def test_applying_an_example_changes_only_the_fields_the_axis_sets(decl):
    changed = set()
    for example in decl.examples:
        for value in parse_axis(example).values:
            changed |= set(BASE.diff(decl.apply(BASE, value.value)))
    assert changed and changed <= set(decl.sets)


@pytest.mark.parametrize("decl", FIRST_STAGE, ids=lambda d: d.name)
def test_needs_forward_pass_agrees_with_the_planner(decl):
    """A value needs a pass of its own exactly when planning its one cell adds a pass to the base's two."""
    for example in decl.examples:
        axis = parse_axis(example)
        for value in axis.values:
            cells = plan_cells(BASE, [dataclasses.replace(axis, values=(value,))])
            extra = len(plan_passes(BASE, cells)) > 2
            assert decl.needs_forward_pass(BASE, value.value) == extra, (decl.name, value.label)


def test_axis_table_lists_every_axis_and_its_forward_pass_need():
    headers, rows = axis_table(BASE)
    assert headers[0] == "axis" and headers[-1] == "own forward pass"
    assert {r[0]: r[-1] == "yes" for r in rows} == OWN_FORWARD_PASS
    assert {r[0]: r[2] for r in rows}["rerank_dtype"] == "reranker"
    assert {r[0]: r[3] for r in rows}["query_prefix"] == 'query_prefix=none,base or query_prefix=["query: ", ""]'


def test_grid_conflicts_come_from_shared_contract_fields():
    axes = [parse_axis(d.examples[0]) for d in SWEEP_AXES]
    retrieval_axes = ("retrieval", "fusion", "fusion_k", "fusion_weight", "sparse_top_k")  # all set the retrieval
    assert conflicts(axes) == [
        ("query_prefix", "prefixes", "query_prefix"),
        ("doc_prefix", "prefixes", "doc_prefix"),
        *[(a, b, "retrieval") for i, a in enumerate(retrieval_axes) for b in retrieval_axes[i + 1 :]],
    ]
    with pytest.raises(SpecError, match="cannot cross doc_prefix with prefixes: both set the contract's doc_prefix"):
        plan_cells(BASE, parse_vary(["doc_prefix=none", "prefixes=swapped"]), grid=True)
    assert len(plan_cells(BASE, parse_vary(["normalize=false", "pooling=cls,last"]), grid=True)) == 2


def test_only_integer_axes_are_plotted_as_lines():
    assert {d.name for d in SWEEP_AXES if d.numeric} == {"dim", "max_length", "depth", "rerank_max_length"}
    assert {d.name for d in SWEEP_AXES if d.shows_storage} == {"dim"}
    assert declaration("dim").label == "dimension" and declaration("max_length").label == "max length (tokens)"


def test_parsed_axes_pickle_across_workers():
    axes = parse_vary([d.examples[-1] for d in SWEEP_AXES], ALL_STAGES)
    assert pickle.loads(pickle.dumps(axes)) == axes


def test_a_new_axis_is_one_declaration():
    """A declaration of an existing kind parses, applies and knows its forward-pass need by itself."""
    truncation = ChoiceAxis(
        name="truncation",
        label="truncation",
        choices=TRUNCATIONS,
        examples=("truncation=truncate,reject",),
        explanation="what happens to long texts",
    )
    values = [truncation.parse(v, literal=False) for v in ("truncate", "REJECT")]
    assert [v.label for v in values] == ["truncate", "reject"]
    assert truncation.apply(BASE, values[1].value) == BASE.replace(truncation="reject")
    assert [truncation.needs_forward_pass(BASE, v.value) for v in values] == [False, True]
    with pytest.raises(SpecError, match="--vary truncation: 'cut' is not valid; choose from truncate, reject"):
        truncation.parse("cut", literal=False)
