import pytest

from evalsuite.base.errors import SpecError
from evalsuite.sweep import parse_vary, plan_cells, plan_passes
from evalsuite.testing.builders import make_contract

BASE = make_contract(query_prefix="query: ", max_length=256)


def test_one_at_a_time_cells_differ_from_base_in_one_axis():
    cells = plan_cells(BASE, parse_vary(["pooling=cls,mean,last", "dim=256,128"]))
    assert [c.name for c in cells] == ["pooling=cls", "pooling=mean", "pooling=last", "dim=256", "dim=128"]
    for c in cells:
        assert len(c.varies) == 1 and len(BASE.diff(c.contract)) <= 1
    assert [c.same_as_base for c in cells] == [False, True, False, False, False]
    assert cells[0].axis == "pooling" and cells[0].value == "cls" and cells[0].label("dim") is None


def test_grid_is_the_full_product_and_needs_one_pass_per_role():
    cells = plan_cells(BASE, parse_vary(["pooling=cls,mean,last", "dim=384,256,128,64"]), grid=True)
    assert len(cells) == 12
    assert cells[0].name == "pooling=cls,dim=384" and cells[0].axis == "pooling+dim"
    passes = plan_passes(BASE, cells)
    assert [(p.role, set(p.poolings)) for p in passes] == [
        ("query", {"cls", "mean", "last"}),
        ("document", {"cls", "mean", "last"}),
    ]


def test_passes_split_only_on_prefix_dtype_and_max_length():
    cells = plan_cells(
        BASE, parse_vary(["query_prefix=none", "max_length=128", "dtype=bfloat16", "normalize=false", "pooling=cls"])
    )
    passes = plan_passes(BASE, cells)
    by_role = {}
    for p in passes:
        by_role.setdefault(p.role, []).append(p)
    # queries: base, no prefix, max 128, bf16; documents: base, max 128, bf16 (query prefix change shares it)
    assert len(by_role["query"]) == 4 and len(by_role["document"]) == 3
    base_doc = next(p for p in by_role["document"] if p.dtype == "float32" and p.max_length == 256)
    assert set(base_doc.poolings) == {"mean", "cls"}
    assert "query_prefix=none" in base_doc.cells and "normalize=false" in base_doc.cells
    # passes sharing an encoder (dtype, max length) are adjacent
    keys = [p.encoder_key for p in passes]
    assert keys == sorted(keys, key=keys.index)
    assert len(set(keys)) == 3


def test_grid_rejects_axes_setting_the_same_prefix():
    with pytest.raises(SpecError, match="cannot cross query_prefix with prefixes"):
        plan_cells(BASE, parse_vary(["query_prefix=none", "prefixes=swapped"]), grid=True)


def test_dims_checked_against_the_model(tiny_model_dir):
    from evalsuite.model import resolve_model

    info = resolve_model(str(tiny_model_dir))
    base = BASE.replace(dim=32, max_length=64)
    with pytest.raises(SpecError, match="sweep cell dim=64: dim 64 exceeds the model's output dimension 32"):
        plan_cells(base, parse_vary(["dim=16,64"]), info=info)
    with pytest.raises(SpecError, match="max_length 4096 exceeds"):
        plan_cells(base, parse_vary(["max_length=4096"]), info=info)
    matryoshka = base.replace(matryoshka_dims=(32, 16, 8))
    with pytest.raises(SpecError, match=r"dim 12 is not one of the Matryoshka dimensions .*\[32, 16, 8\]"):
        plan_cells(matryoshka, parse_vary(["dim=16,12"]))
    assert len(plan_cells(matryoshka, parse_vary(["dim=16,8"]), info=info)) == 2
