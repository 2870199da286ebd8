"""Reduced precision named from the shape of the served vectors' departure (pure numpy, no model, no server).

The served vectors are built from the alternatives' own vectors, each row turned by a chosen angle in a random
direction, so every expected cosine is known independently of the code under test. The one-line bugs caught, one
test each: a CLS fault named precision (the check flipped, or the cosine floor dropped when CLS is not among the
alternatives); the evenness test dropped or flipped (a truncation-shaped fault, half the texts exact,
is named precision); the median-cosine floor dropped (another model, cosine ~0.6, named precision); the direction
test dropped (a server that scales every vector named precision); the text count ignored (the index audit's
one-vector diagnoses would name it); the best alternative's departures left out of the causes, or the contract's
vectors judged instead of its (a quantized CLS file is named precision alone, or nothing); a best alternative
accepted without beating the contract by the margin.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsuite.diagnose import precision as P
from evalsuite.diagnose.hypotheses import Alternative
from evalsuite.diagnose.score import EXPLAIN_TOL, derive, diagnose, name_precision, numeric_variants
from evalsuite.testing.builders import make_contract

HIDDEN = 32
N = 12
CONTRACT = make_contract(model_revision="r", tokenizer_revision="t", max_length=64, dim=HIDDEN)
BASE = Alternative.of_contract(CONTRACT, HIDDEN)
IDS = [f"t{i}" for i in range(N)]
RNG = np.random.default_rng(7)
MEAN, CLS = RNG.normal(size=(N, HIDDEN)) + 2.0, RNG.normal(size=(N, HIDDEN))  # "+ 2": norms far from 1


def candidates() -> dict[Alternative, np.ndarray]:
    out = {}
    for pooling, pooled in (("mean", MEAN), ("cls", CLS)):
        for alt in numeric_variants(BASE.replace(pooling=pooling), HIDDEN, HIDDEN, (None, "float16")):
            out[alt] = derive(pooled, alt)
    return out


def turned(vectors: np.ndarray, cosines: np.ndarray, seed: int = 1) -> np.ndarray:
    """Each row turned to exactly ``cosines[i]`` with its own vector, in a random direction, norm kept."""
    rng = np.random.default_rng(seed)
    out = np.empty_like(vectors, dtype=np.float64)
    for i, (v, c) in enumerate(zip(np.asarray(vectors, np.float64), cosines, strict=True)):
        u = rng.normal(size=v.shape)
        u -= u @ v / (v @ v) * v
        u /= np.linalg.norm(u)
        out[i] = np.linalg.norm(v) * (c * v / np.linalg.norm(v) + np.sqrt(1 - c * c) * u)
    return out.astype(np.float32)


def judged(served: np.ndarray, ids=IDS, engine: str | None = "llama-cpp-python"):
    cands = candidates()
    rows = len(ids)
    cands = {a: v[:rows] for a, v in cands.items()}
    found = diagnose(served, cands, ids, base=BASE, hidden=HIDDEN, contract=CONTRACT, what="x", engine=engine)
    return found, name_precision(found, served, cands, ids, base=BASE, hidden=HIDDEN, contract=CONTRACT)


# q4_0's shape on the bundled model: cosines 0.88-0.98, median 0.97 (docs/engines.md)
Q4_COSINES = np.linspace(0.94, 0.98, N)
Q4_COSINES[3] = 0.88


def test_an_even_departure_at_high_cosine_is_named_precision_with_its_cosine_and_remedy():
    served = turned(derive(MEAN, BASE), Q4_COSINES)
    before, d = judged(served)
    assert not before.explained and not before.agrees  # nothing explains it: the gap this closes
    assert [(c.factor, c.stage) for c in d.causes] == [("precision", "batch")]
    assert d.causes[0].value == pytest.approx(0.88, abs=1e-4)
    assert d.best.label == "the contract" and d.precision is not None
    assert d.precision.median_cosine == pytest.approx(np.median(Q4_COSINES), abs=1e-5)
    assert d.precision.worst == "t3"
    sentence = d.sentence()
    assert sentence.startswith("cause: the served vectors are made at lower precision than the reference's (min cosine")
    assert "the closest is the contract's own" in sentence and "every text departs evenly from it" in sentence
    assert "llama-cpp-python: serve the f32 GGUF" in sentence
    assert json.loads(json.dumps(d.to_dict()))["precision"]["worst"] == "t3"
    _, vllm = judged(served, engine="vllm")
    assert "vLLM: --dtype float32 and no --quantization" in vllm.sentence()


def test_a_cls_fault_is_named_cls_and_never_precision():
    served = derive(CLS, BASE.replace(pooling="cls"))  # CLS pooling, exactly
    before, d = judged(served)
    assert before.explained and d is before and d.precision is None
    assert [c.factor for c in d.causes] == ["pooling"]
    # were CLS not among the alternatives, the contract's is the closest, but far: not precision either
    mean_only = {a: v for a, v in candidates().items() if a.pooling == "mean"}
    found = diagnose(served, mean_only, IDS, base=BASE, hidden=HIDDEN, contract=CONTRACT, what="x")
    assert found.best.alternative == BASE and not found.explained
    assert name_precision(found, served, mean_only, IDS, base=BASE, hidden=HIDDEN, contract=CONTRACT) is found


def test_a_departure_on_half_the_texts_is_not_precision():
    """Truncation and a prefix on one role leave the other texts exact: evenness ~0."""
    cosines = np.where(np.arange(N) % 2 == 0, 1.0, 0.97)
    served = turned(derive(MEAN, BASE), cosines)
    _, d = judged(served)
    assert d.precision is None and not d.explained
    assert P.spread(served, derive(MEAN, BASE), IDS).evenness < 1e-3


def test_another_model_departing_evenly_is_not_precision():
    served = turned(derive(MEAN, BASE), np.linspace(0.5, 0.7, N))
    _, d = judged(served)
    assert d.precision is None and not d.explained
    assert P.spread(served, derive(MEAN, BASE), IDS).evenness > P.EVENNESS  # only the cosine floor stops it


def test_vectors_only_scaled_are_not_precision():
    served = 1.3 * turned(derive(MEAN, BASE), np.full(N, 1 - 1e-7))  # the same directions (evenly), other norms
    before, d = judged(served)
    assert before.contract.max_difference > EXPLAIN_TOL  # it does not agree
    assert d.precision is None


def test_a_single_vector_is_not_judged():
    served = turned(derive(MEAN, BASE)[:1], Q4_COSINES[-1:])
    _, d = judged(served, ids=IDS[:1])
    assert d.precision is None and not d.explained


def test_precision_on_top_of_another_departure_names_both():
    """A quantized GGUF whose pooling type says CLS, served by llama-cpp-python (which never normalizes): the
    alternative is the closest by far, and the departure from it (not from the contract's) is even."""
    alt = BASE.replace(pooling="cls", normalize=False, renormalize=False)
    served = turned(derive(CLS, alt), Q4_COSINES)
    before, d = judged(served)
    assert not before.explained
    assert [(c.factor, c.value) for c in d.causes] == [
        ("pooling", "cls"),
        ("normalize", False),
        ("precision", pytest.approx(0.88, abs=1e-4)),
    ]
    assert d.best.label == "pooling=cls, normalize=false"
    assert "the closest is pooling=cls, normalize=false of the reference" in d.sentence()


def test_a_best_alternative_not_clearly_better_than_the_contract_is_not_named():
    """The best alternative (fewest departures among the closest) must itself fit MARGIN times better than the
    contract before its departures are named, as for an explaining one: here it fits 1/0.6 times better."""
    contract = derive(MEAN, BASE)
    served = turned(contract, Q4_COSINES)
    one = BASE.replace(rounding="float16")
    two = BASE.replace(rounding="float16", pooling="cls")
    cands = {
        BASE: contract,
        one: (served + 0.6 * (contract - served)).astype(np.float32),
        two: (served + 0.35 * (contract - served)).astype(np.float32),
    }
    found = diagnose(served, cands, IDS, base=BASE, hidden=HIDDEN, contract=CONTRACT, what="x")
    assert found.best.alternative == one and not found.explained
    assert name_precision(found, served, cands, IDS, base=BASE, hidden=HIDDEN, contract=CONTRACT) is found
    cands[one] = (served + 0.45 * (contract - served)).astype(np.float32)  # now more than twice as close
    found = diagnose(served, cands, IDS, base=BASE, hidden=HIDDEN, contract=CONTRACT, what="x")
    d = name_precision(found, served, cands, IDS, base=BASE, hidden=HIDDEN, contract=CONTRACT)
    assert [c.factor for c in d.causes] == ["rounding", "precision"]
