"""Index specs: one canonical text per index, typed errors, and the parameters really built for small corpora."""

import pytest

from evalsuite.base.errors import ContractError, SpecError
from evalsuite.contract import Contract
from evalsuite.retrieval.index.spec import IndexSpec, canonical, parse_index, resolve
from evalsuite.testing.builders import make_contract

BASE = make_contract()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("flat", "flat"),
        (" FLAT ", "flat"),
        ("hnsw", "hnsw:M=32,efc=40,ef=64"),
        ("hnsw:M=16,ef=128", "hnsw:M=16,efc=40,ef=128"),
        ("hnsw:m=16,efSearch=128,efConstruction=80", "hnsw:M=16,efc=80,ef=128"),
        ("ivf:nlist=256,nprobe=16", "ivf:nlist=256,nprobe=16"),
        ("ivf:nprobe=4", "ivf:nlist=256,nprobe=4"),
        ("ivfpq", "ivfpq:nlist=256,nprobe=16,nbits=8"),
        ("ivfpq:nlist=64,m=48,nbits=8", "ivfpq:nlist=64,nprobe=16,m=48,nbits=8"),
        ("sq8", "sq8"),
        ("binary", "binary"),
        ("binary+rescore=100", "binary+rescore=100"),
        ("hnsw:ef=32+rescore=50", "hnsw:M=32,efc=40,ef=32+rescore=50"),
    ],
)
def test_canonical_text_fills_defaults_and_names(text, expected):
    assert canonical(text) == expected
    assert canonical(expected) == expected  # canonical is a fixed point


@pytest.mark.parametrize(
    "text, match",
    [
        ("annoy", "unknown index kind 'annoy'; choose one of flat, hnsw, ivf, ivfpq, sq8, binary"),
        ("hnsw:nlist=4", r"hnsw has no parameter 'nlist' \(parameters: M, efc, ef\)"),
        ("ivf:nlist=abc", "nlist='abc' is not an integer"),
        ("ivf:nlist=0", r"nlist=0 is out of range \(>= 1\)"),
        ("ivfpq:nbits=17", r"nbits=17 is out of range \(>= 1, <= 16\)"),
        ("binary+rescore=0", "rescore must be >= 1"),
        ("binary+refine=10", r"unknown modifier 'refine=10'; the only one is \+rescore=R"),
        ("flat+rescore=10", "flat is exact already"),
        ("hnsw:", "nothing after ':'"),
        ("", "non-empty"),
    ],
)
def test_bad_specs_are_spec_errors_that_say_what_is_valid(text, match):
    with pytest.raises(SpecError, match=match):
        parse_index(text)


def test_contract_index_defaults_to_flat_and_is_stored_canonical():
    assert BASE.index == "flat"
    assert BASE.replace(index="hnsw") == BASE.replace(index="hnsw:M=32,efc=40,ef=64")
    assert BASE.replace(index="hnsw").index == "hnsw:M=32,efc=40,ef=64"
    assert BASE.replace(index="hnsw") != BASE
    with pytest.raises(SpecError, match="unknown index kind"):
        BASE.replace(index="lsh")


def test_old_contracts_without_an_index_load_as_flat_and_keep_their_fingerprint():
    old = BASE.to_dict()
    old.pop("index")
    loaded = Contract.from_dict(old, source="baseline.json")
    assert loaded == BASE and loaded.diff(BASE) == {}
    # a fingerprint written before the field existed: sha256 of the old dict
    import hashlib
    import json

    old.pop("matryoshka_dims")
    assert BASE.fingerprint() == hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()[:16]
    assert BASE.replace(index="sq8").fingerprint() != BASE.fingerprint()


def test_an_index_built_under_another_contract_is_a_difference():
    served = Contract.from_dict(dict(BASE.to_dict(), index="ivf:nlist=64,nprobe=8"))
    assert BASE.diff(served) == {"index": ("flat", "ivf:nlist=64,nprobe=8")}
    assert "index: expected 'flat', found 'ivf:nlist=64,nprobe=8'" in BASE.describe_diff(served)
    with pytest.raises(ContractError, match="unknown contract field"):
        Contract.from_dict(dict(BASE.to_dict(), index_type="flat"))


def test_resolve_clamps_ivf_to_the_training_points_and_says_so():
    spec = parse_index("ivf:nlist=256,nprobe=16")
    built, notes = resolve(spec, 458, 384)
    assert built.get("nlist") == 458 // 39 == 11 and built.get("nprobe") == 11
    assert any("nlist 256 -> 11" in n for n in notes) and any("nprobe 16 -> 11" in n for n in notes)
    same, none = resolve(spec, 1_000_000, 384)
    assert same == spec and none == ()
    assert resolve(parse_index("ivf:nlist=4"), 10, 8)[0].get("nlist") == 1  # fewer than 39 points: one list


def test_resolve_ivfpq_m_divides_the_dimension_and_nbits_fits_the_corpus():
    spec = parse_index("ivfpq:nlist=8,nprobe=4,m=48,nbits=8")
    built, notes = resolve(spec, 100_000, 384)
    assert (built.get("m"), built.get("nbits"), notes) == (48, 8, ())
    built, notes = resolve(spec, 100_000, 100)  # 48 does not divide 100: 25 does
    assert built.get("m") == 25 and any("m 48 -> 25" in n for n in notes)
    auto, _ = resolve(parse_index("ivfpq"), 100_000, 256)
    assert auto.get("m") == 32  # default: dimension / 8
    small, notes = resolve(parse_index("ivfpq:nlist=4"), 458, 32)
    assert small.get("nbits") == 3 and 2 ** small.get("nbits") <= 458 // 39  # 8 centroids <= 11 lists' worth
    assert any("nbits 8 -> 3" in n for n in notes)


def test_unresolved_parameters_are_not_guessed():
    with pytest.raises(KeyError, match="not resolved"):
        parse_index("ivfpq").get("m")
    assert IndexSpec("flat").text == "flat"
