"""Retrieval specs: one canonical text per retriever, typed errors naming the setting, the contract keeping dense
out of its JSON and fingerprint, and the settings as flags and spec-file keys."""

from __future__ import annotations

import argparse

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.contract import Contract, retrieval_of
from evalsuite.retrieval.retrievers import RETRIEVER_NAMES, canonical, parse_retrieval, resolve
from evalsuite.run.options import RUN_OPTIONS, add_options, collect
from evalsuite.run.spec import RunSpec
from evalsuite.testing.builders import make_contract

BM25_DEFAULTS = "k1=1.5,b=0.75,method=lucene,stopwords=en,stemmer=none"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("dense", "dense"),
        (" DENSE ", "dense"),
        ("bm25", f"bm25:{BM25_DEFAULTS}"),
        ("bm25:b=0.6,K1=1.2", "bm25:k1=1.2,b=0.6,method=lucene,stopwords=en,stemmer=none"),
        ("hybrid", f"hybrid:fuse=dense+bm25,fusion=rrf,k=60,depth=100,{BM25_DEFAULTS}"),
        ("hybrid:fuse=bm25+dense,k=20", f"hybrid:fuse=bm25+dense,fusion=rrf,k=20,depth=100,{BM25_DEFAULTS}"),
        (
            "hybrid:fusion=wsum,weights=0.7+0.3,norm=zmuv,depth=50,k1=1.2",
            "hybrid:fuse=dense+bm25,fusion=wsum,weights=0.7+0.3,norm=zmuv,depth=50,"
            "k1=1.2,b=0.75,method=lucene,stopwords=en,stemmer=none",
        ),
        (
            "hybrid:fusion=wsum",
            f"hybrid:fuse=dense+bm25,fusion=wsum,weights=0.5+0.5,norm=min-max,depth=100,{BM25_DEFAULTS}",
        ),
        ("hybrid:fusion=mnz", f"hybrid:fuse=dense+bm25,fusion=mnz,norm=min-max,depth=100,{BM25_DEFAULTS}"),
        ("sparse", "sparse:top_k=0"),
        (
            "hybrid:fuse=sparse+bm25,top_k=64",
            f"hybrid:fuse=sparse+bm25,fusion=rrf,k=60,depth=100,top_k=64,{BM25_DEFAULTS}",
        ),
    ],
)
def test_canonical_text(text: str, expected: str) -> None:
    assert canonical(text) == expected
    assert canonical(expected) == expected  # the canonical text parses to itself


@pytest.mark.parametrize(
    "text, needle",
    [
        ("sparse2", "choose one of dense, sparse, bm25, multivector, hybrid"),
        ("", "non-empty"),
        ("bm25:", "nothing after"),
        ("bm25:k=3", "bm25 has no parameter 'k' (parameters: k1, b, method, stopwords, stemmer)"),
        ("dense:k1=1", "dense has no parameter 'k1'"),
        ("bm25:b=2", "bm25_b (--bm25-b) '2' is not valid: it must be a number >= 0 and <= 1"),
        ("bm25:k1=nan", "a finite number"),
        ("bm25:method=bm99", "one of lucene, robertson, atire, bm25l, bm25+"),
        ("hybrid:fuse=dense", "two or more different retrievers"),
        ("hybrid:fuse=dense+dense", "two or more different retrievers"),
        (
            "hybrid:fuse=dense+colbert",
            "fuse (--fuse) 'dense+colbert' is not valid: it must be one of dense, sparse, bm25, multivector",
        ),
        ("hybrid:fuse=dense+hybrid", "it must be one of dense, sparse, bm25, multivector"),
        ("sparse:top_k=-1", "sparse_top_k (--sparse-top-k) '-1' is not valid"),
        ("hybrid:fusion=wsum,weights=1", "gives 1 weights for 2 fused retrievers"),
        ("hybrid:fusion=wsum,k=3", "fusion_k applies to --fusion rrf, not wsum"),
        ("hybrid:weights=0.5+0.5", "fusion_weights applies to --fusion wsum, not rrf"),
        ("hybrid:norm=zmuv", "fusion_norm applies to --fusion the score fusions"),
        ("hybrid:k=0", "fusion_k (--fusion-k) '0' is not valid"),
        ("hybrid:fusion=borda", "one of rrf, wsum, sum, mnz, max"),
    ],
)
def test_bad_specs_name_the_setting(text: str, needle: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_retrieval(text)
    assert needle in str(err.value)


def test_settings_apply_over_the_text() -> None:
    assert resolve("hybrid", {"fusion": "wsum", "fusion_weights": (0.7, 0.3)}).text.startswith(
        "hybrid:fuse=dense+bm25,fusion=wsum,weights=0.7+0.3,norm=min-max,depth=100"
    )
    # a flag overrides what the text says; the text's own parameters stay
    assert resolve("hybrid:fusion=rrf,k=10", {"fusion_depth": 30}).text.startswith(
        "hybrid:fuse=dense+bm25,fusion=rrf,k=10,depth=30"
    )
    # --fusion wsum over a text that said only "hybrid" is not a conflict with the default k
    assert "k=" not in resolve("hybrid", {"fusion": "sum"}).text
    with pytest.raises(SpecError, match=r"fusion_k \(--fusion-k\) does not apply to retrieval 'bm25'"):
        resolve("bm25", {"fusion_k": 5})
    with pytest.raises(SpecError, match=r"bm25_k1 .* does not apply to retrieval 'dense'.*setting of bm25"):
        resolve("dense", {"bm25_k1": 1.2})


def test_one_setting_changed_as_a_sweep_axis_changes_it() -> None:
    from evalsuite.retrieval.retrievers import with_setting

    # over a retriever that does not take it: the first that does, at its defaults
    assert with_setting("dense", "fusion_k", 20).text == canonical("hybrid:k=20")
    assert with_setting("dense", "sparse_top_k", "64").text == "sparse:top_k=64"
    # a new fusion drops what the old one took and it does not; norm stays where both take it
    assert with_setting("hybrid:k=10", "fusion", "wsum").text == canonical("hybrid:fusion=wsum")
    assert with_setting("hybrid:fusion=sum,norm=zmuv", "fusion", "mnz").text == canonical("hybrid:fusion=mnz,norm=zmuv")
    assert with_setting("hybrid:fusion=wsum,weights=0.9+0.1", "fusion", "rrf").text == canonical("hybrid")
    # weights are wsum's: setting them makes the fusion wsum
    assert with_setting("hybrid:k=10", "fusion_weights", "0.7+0.3").text == canonical(
        "hybrid:fusion=wsum,weights=0.7+0.3"
    )
    assert with_setting("hybrid:fuse=dense+sparse", "sparse_top_k", 8).text == canonical(
        "hybrid:fuse=dense+sparse,top_k=8"
    )
    with pytest.raises(SpecError, match="sparse_top_k applies to none of the fused retrievers dense\\+bm25"):
        with_setting("hybrid", "sparse_top_k", 8)
    with pytest.raises(SpecError, match="gives 2 weights for 3 fused retrievers"):
        with_setting("hybrid:fuse=dense+sparse+bm25", "fusion_weights", "0.7+0.3")


def test_the_retrieval_setting_axes_parse_and_apply() -> None:
    from evalsuite.sweep import parse_axis, plan_cells

    base = make_contract()
    cells = plan_cells(base, [parse_axis("fusion_weight=0.8,0.25+0.75")])
    assert [c.name for c in cells] == ["fusion_weight=0.8", "fusion_weight=0.25+0.75"]
    assert [c.contract.retrieval for c in cells] == [
        canonical("hybrid:fusion=wsum,weights=0.8+0.2"),
        canonical("hybrid:fusion=wsum,weights=0.25+0.75"),
    ]
    three = make_contract(retrieval="hybrid:fuse=dense+sparse+bm25")
    with pytest.raises(SpecError, match="gives 2 weights for 3 fused retrievers"):
        plan_cells(three, [parse_axis("fusion_weight=0.8")])
    for bad, needle in (
        ("fusion=borda", "--vary fusion: fusion (--fusion) 'borda' is not valid: it must be one of rrf, wsum"),
        ("fusion_k=0", "--vary fusion_k: fusion_k (--fusion-k) '0' is not valid"),
        ("fusion_weight=1.5", "a single weight W"),
        ("sparse_top_k=-3", "--vary sparse_top_k: sparse_top_k (--sparse-top-k) '-3' is not valid"),
    ):
        with pytest.raises(SpecError) as err:
            parse_axis(bad)
        assert needle in str(err.value)


def test_dense_stays_out_of_the_contract_json_and_fingerprint() -> None:
    dense = make_contract()
    assert dense.retrieval == "dense"
    d = dense.to_dict()
    assert "retrieval" not in d  # a baseline or manifest written before retrievers were declared compares equal
    assert Contract.from_dict(d) == dense
    # the fingerprint of a dense contract is the one computed before the field existed (pinned digest)
    assert dense.fingerprint() == make_contract(retrieval=" Dense ").fingerprint()
    bm25 = make_contract(retrieval="bm25")
    assert bm25.to_dict()["retrieval"] == f"bm25:{BM25_DEFAULTS}"
    assert bm25.fingerprint() != dense.fingerprint()
    assert Contract.from_dict(bm25.to_dict()) == bm25
    assert dense.diff(bm25) == {"retrieval": ("dense", f"bm25:{BM25_DEFAULTS}")}
    assert make_contract(retrieval="bm25:k1=1.5") == bm25  # defaults spelled out compare equal
    with pytest.raises(SpecError, match="not a retriever"):
        make_contract(retrieval="nope")


def test_dense_fingerprint_is_unchanged_from_before() -> None:
    """The digests of these contracts as computed before the retrieval field existed (pinned): every baseline,
    manifest and history record written then still matches."""
    assert make_contract().fingerprint() == "5ab681b939e8e792"
    assert make_contract(index="hnsw", dim=128).fingerprint() == "2b0a511c7cc2edf4"


def _parse(*argv: str) -> dict[str, object]:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_options(parser.add_argument, RUN_OPTIONS)
    return collect(parser.parse_args(list(argv)), RUN_OPTIONS)


def test_flags_and_spec_keys_make_the_same_retrieval() -> None:
    flags = _parse("--retrieval", "hybrid", "--fuse", "dense,bm25", "--fusion", "wsum", "--fusion-weights", "0.7,0.3")
    from_flags = RunSpec.from_mapping(flags, source="command line")
    from_file = RunSpec.from_mapping(
        {"retrieval": "hybrid", "fuse": ["dense", "bm25"], "fusion": "wsum", "fusion_weights": [0.7, 0.3]},
        source="evalsuite.toml",
    )
    assert from_flags.fusion_weights == from_file.fusion_weights == (0.7, 0.3)
    assert retrieval_of(from_flags) == retrieval_of(from_file)
    assert retrieval_of(from_file).startswith("hybrid:fuse=dense+bm25,fusion=wsum,weights=0.7+0.3")
    assert retrieval_of(RunSpec.from_mapping({"retrieval": "bm25", "bm25_k1": 1.2}, source="s")).startswith(
        "bm25:k1=1.2,"
    )
    assert retrieval_of(RunSpec()) == "dense"


@pytest.mark.parametrize(
    "data, needle",
    [
        ({"fusion_weights": "heavy"}, "fusion_weights (--fusion-weights) 'heavy' is not valid: it must be a number"),
        ({"fusion_weights": [0.7, "x"]}, "fusion_weights must be a list of numbers"),
        ({"bm25_k1": "big"}, "bm25_k1 must be a number"),
        ({"retrieval": "hybrid", "fusion_k": 5, "fusion": "wsum"}, "fusion_k applies to --fusion rrf, not wsum"),
        ({"retrieval": "bm25", "fuse": ["dense", "bm25"]}, "does not apply to retrieval 'bm25'"),
        ({"retrieval": "bm99"}, "not a retriever"),
    ],
)
def test_spec_file_errors_name_the_file(data: dict[str, object], needle: str) -> None:
    with pytest.raises(SpecError) as err:
        RunSpec.from_mapping(data, source="evalsuite.toml")
    assert str(err.value).startswith("evalsuite.toml: ")
    assert needle in str(err.value)


def test_flags_reject_bad_values_at_parse_time() -> None:
    with pytest.raises(argparse.ArgumentError, match="not a retriever"):
        _parse("--retrieval", "lexical")
    with pytest.raises(argparse.ArgumentError, match="must be a number >= 0 and <= 1"):
        _parse("--bm25-b", "1.5")


def test_every_retriever_has_an_explanation() -> None:
    from evalsuite.retrieval.retrievers import RETRIEVERS

    assert RETRIEVER_NAMES == ("dense", "sparse", "bm25", "multivector", "hybrid")
    assert all(r.explanation for r in RETRIEVERS)
