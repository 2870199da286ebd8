import pytest

from evalsuite.base.errors import SpecError
from evalsuite.sweep import parse_vary, sweep_from_mapping
from evalsuite.sweep.axes import apply
from evalsuite.testing.builders import make_contract

BASE = make_contract(query_prefix="query: ", doc_prefix="passage: ", max_length=256)


def _values(axis):
    return [(v.label, v.value) for v in axis.values]


def test_comma_values_per_axis():
    axes = parse_vary(
        ["pooling=cls,MEAN,last", "dim=256,128", "max-length=128,512", "normalize=true,no", "dtype=bfloat16"]
    )
    assert [a.name for a in axes] == ["pooling", "dim", "max_length", "normalize", "dtype"]
    assert _values(axes[0]) == [("cls", "cls"), ("mean", "mean"), ("last", "last")]
    assert _values(axes[1]) == [("256", 256), ("128", 128)]
    assert _values(axes[3]) == [("true", True), ("false", False)]
    assert axes[1].numeric and not axes[0].numeric


def test_repeated_axis_is_merged_without_duplicates():
    (axis,) = parse_vary(["pooling=cls", "pooling=cls,last"])
    assert axis.labels == ("cls", "last")


def test_prefix_values_keywords_and_json():
    (q,) = parse_vary(["query_prefix=none,base,search: "])
    assert _values(q) == [("none", ""), ("base", None), ('"search: "', "search: ")]
    (d,) = parse_vary(['doc_prefix=["a, b: ", "none", null]'])
    assert _values(d) == [('"a, b: "', "a, b: "), ('"none"', "none"), ("none", "")]
    assert apply(BASE, "query_prefix", None) == BASE
    assert apply(BASE, "doc_prefix", "").doc_prefix == ""


def test_prefix_pairs():
    (p,) = parse_vary(["prefixes=base,none,swapped,query_only,doc_only,q: |d: "])
    got = {v.label: apply(BASE, "prefixes", v.value) for v in p.values}
    assert (got["base"].query_prefix, got["base"].doc_prefix) == ("query: ", "passage: ")
    assert (got["none"].query_prefix, got["none"].doc_prefix) == ("", "")
    assert (got["swapped"].query_prefix, got["swapped"].doc_prefix) == ("passage: ", "query: ")
    assert (got["query_only"].query_prefix, got["query_only"].doc_prefix) == ("query: ", "")
    assert (got["doc_only"].query_prefix, got["doc_only"].doc_prefix) == ("", "passage: ")
    assert (got['"q: "|"d: "'].query_prefix, got['"q: "|"d: "'].doc_prefix) == ("q: ", "d: ")
    (j,) = parse_vary(['prefixes=["swapped", ["x", ""]]'])
    assert apply(BASE, "prefixes", j.values[1].value).query_prefix == "x"


def test_normalize_false_switches_cosine_to_dot():
    c = apply(BASE, "normalize", False)
    assert (c.normalize, c.similarity) == (False, "dot")


@pytest.mark.parametrize(
    "item, message",
    [
        ("pooling", "expected AXIS=V1,V2"),
        ("colour=red", "unknown axis 'colour'"),
        ("pooling=cls,median", "'median' is not valid; choose from cls, mean, last, max"),
        ("dim=256,abc", "'abc' is not an integer"),
        ("dim=0", "too small"),
        ("max_length=128,,256", "empty value"),
        ("normalize=maybe", "not a boolean"),
        ("dtype=int8", "choose from float32, bfloat16, float16"),
        ("prefixes=sideways", "neither one of base, none, swapped"),
        ('query_prefix=["a", ', "does not parse"),
        ('prefixes=[["a"]]', "pair of strings"),
    ],
)
def test_bad_axes_raise_spec_errors(item, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_vary([item])


def test_no_axis_is_an_error():
    with pytest.raises(SpecError, match="at least one --vary"):
        parse_vary([])


def test_spec_file_table():
    axes, grid = sweep_from_mapping(
        {"vary": {"pooling": ["cls", "mean"], "dim": [256, 128]}, "grid": True}, source="evalsuite.toml [sweep]"
    )
    assert grid and [a.labels for a in axes] == [("cls", "mean"), ("256", "128")]
    axes, grid = sweep_from_mapping({"vary": ["pooling=cls"]}, source="x")
    assert not grid and axes[0].labels == ("cls",)
    with pytest.raises(SpecError, match=r"evalsuite\.toml: unknown sweep setting"):
        sweep_from_mapping({"vary": ["pooling=cls"], "grdi": True}, source="evalsuite.toml")
    with pytest.raises(SpecError, match="x: --vary pooling: 'median'"):
        sweep_from_mapping({"vary": {"pooling": ["median"]}}, source="x")
