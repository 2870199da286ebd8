"""The pure scoring of hypotheses (no model, no server): rounding, derivation order, and which
alternative is named. Bugs caught: bfloat16 truncating instead of rounding to nearest even, the cut
re-normalized when the alternative says not, the contract named as a cause, a superset of causes
preferred over the simpler one, a poor fit called an explanation."""

from __future__ import annotations

import numpy as np
import pytest

from evalsuite.diagnose.hypotheses import Alternative
from evalsuite.diagnose.score import EXPLAIN_TOL, derive, diagnose, numeric_variants, round_to
from evalsuite.testing.builders import make_contract

CONTRACT = make_contract(model_revision="r", tokenizer_revision="t", max_length=64, dim=8)


def test_bfloat16_rounds_to_nearest_even_and_float16_as_numpy():
    ulp = 2.0**-7  # bfloat16 keeps 7 mantissa bits
    x = np.array([[1.0 + ulp / 2, 1.0 + 1.5 * ulp, 1.0 + 0.75 * ulp, -3.0]], dtype=np.float32)
    assert round_to(x, "bfloat16").tolist() == [[1.0, 1.0 + 2 * ulp, 1.0 + ulp, -3.0]]
    assert round_to(x, "float16").tolist() == x.astype(np.float16).astype(np.float32).tolist()
    with pytest.raises(ValueError, match="unknown rounding"):
        round_to(x, "int8")


def test_derive_normalizes_cuts_then_renormalizes_only_when_asked():
    pooled = np.array([[3.0, 4.0, 0.0, 12.0]])
    base = Alternative.of_contract(CONTRACT.replace(dim=2), 4)
    assert np.allclose(derive(pooled, base), [[0.6, 0.8]])
    cut = derive(pooled, base.replace(renormalize=False))
    assert np.allclose(cut, [[3 / 13, 4 / 13]])  # Infinity: normalized whole, then cut
    assert np.allclose(derive(pooled, base.replace(normalize=False, renormalize=False)), [[3.0, 4.0]])


def test_the_simplest_explaining_alternative_is_named_with_its_causes():
    rng = np.random.default_rng(0)
    mean, cls = rng.normal(size=(6, 8)), rng.normal(size=(6, 8))
    base = Alternative.of_contract(CONTRACT, 8)
    candidates = {}
    for pooling, pooled in (("mean", mean), ("cls", cls)):
        for alt in numeric_variants(base.replace(pooling=pooling), 8, 8, (None, "float16")):
            candidates[alt] = derive(pooled, alt)
    served = cls.astype(np.float32)  # CLS pooling, not normalized
    ids = [f"t{i}" for i in range(6)]
    d = diagnose(served, candidates, ids, base=base, hidden=8, contract=CONTRACT, what="six texts")
    assert [(c.factor, c.value) for c in d.causes] == [("pooling", "cls"), ("normalize", False)]
    assert d.best.label == "pooling=cls, normalize=false"  # not the float16-rounded superset
    assert d.best.max_difference < 1e-6 and d.contract.max_difference > EXPLAIN_TOL

    agreeing = diagnose(derive(mean, base), candidates, ids, base=base, hidden=8, contract=CONTRACT, what="x")
    assert agreeing.causes == () and agreeing.agrees
    assert agreeing.sentence().startswith("cause: not in the vectors")

    noise = rng.normal(size=(6, 8))
    lost = diagnose(noise, candidates, ids, base=base, hidden=8, contract=CONTRACT, what="x")
    assert not lost.explained and not lost.agrees
    assert lost.sentence().startswith("cause: no hypothesis explains the served vectors (x); closest: ")
