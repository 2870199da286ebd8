import dataclasses
import json
from types import SimpleNamespace

import pytest

from evalsuite.base.errors import ContractError, SpecError
from evalsuite.contract import Contract, ContractRequest, build_contract
from evalsuite.model import resolve_model
from evalsuite.retrieval.retrievers import RETRIEVAL_SETTINGS
from evalsuite.run.spec import RunSpec
from evalsuite.testing.builders import make_contract


def _c(**kw):
    return make_contract(**{"model_revision": "r", "tokenizer_revision": "t", "dim": 32, **kw})


def test_round_trip_and_fingerprint():
    c = _c(query_prefix="query: ")
    again = Contract.from_dict(json.loads(json.dumps(c.to_dict())))
    assert again == c and again.fingerprint() == c.fingerprint()
    assert c.fingerprint() != _c().fingerprint()


def test_diff_names_fields():
    a, b = _c(), _c(pooling="cls", dim=16)
    assert a.diff(b) == {"pooling": ("mean", "cls"), "dim": (32, 16)}
    assert "pooling: expected 'mean', found 'cls'" in a.describe_diff(b)


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"pooling": "median"}, "pooling='median' is not valid"),
        ({"dtype": "int8"}, "dtype='int8' is not valid"),
        ({"max_length": 1}, "max_length=1"),
        ({"dim": 0}, "dim=0"),
        ({"normalize": False}, "cosine' needs normalize"),
    ],
)
def test_invalid(kw, msg):
    with pytest.raises(SpecError, match=msg):
        _c(**kw)


def test_from_dict_rejects_unknown_and_missing():
    d = _c().to_dict()
    with pytest.raises(ContractError, match="unknown contract field"):
        Contract.from_dict({**d, "colour": "red"})
    d.pop("pooling")
    with pytest.raises(ContractError, match="lacks field"):
        Contract.from_dict(d)


def test_forward_key_ignores_pooling_and_dim():
    assert _c().forward_key("query") == _c(pooling="cls", dim=8).forward_key("query")
    assert _c().forward_key("query") != _c(query_prefix="q: ").forward_key("query")
    assert _c().forward_key("query") != _c().forward_key("document")


def test_build_contract_defaults_from_model(tiny_model_dir):
    info = resolve_model(str(tiny_model_dir))
    c = build_contract(RunSpec(), info)
    assert (c.pooling, c.normalize, c.similarity, c.max_length, c.dim) == ("mean", True, "cosine", 64, 32)
    c2 = build_contract(RunSpec(pooling="cls", dim=16, normalize=False, query_prefix="q: "), info)
    assert (c2.pooling, c2.dim, c2.similarity, c2.query_prefix) == ("cls", 16, "dot", "q: ")


def test_build_contract_limits(tiny_model_dir, tmp_path):
    info = resolve_model(str(tiny_model_dir))
    with pytest.raises(SpecError, match="dim 64 exceeds the model's output dimension 32"):
        build_contract(RunSpec(dim=64), info)
    with pytest.raises(SpecError, match="max_length 4096 exceeds"):
        build_contract(RunSpec(max_length=4096), info)


def test_declared_matryoshka_dims_are_enforced(make_tiny_bert, tmp_path):
    d = make_tiny_bert(tmp_path / "mrl")
    cfg = json.loads((d / "config.json").read_text())
    cfg["matryoshka_dimensions"] = [32, 16, 8]
    (d / "config.json").write_text(json.dumps(cfg))
    info = resolve_model(str(d))
    assert build_contract(RunSpec(dim=16), info).dim == 16
    with pytest.raises(SpecError, match=r"dim 12 is not one of the Matryoshka dimensions .*\[32, 16, 8\]"):
        build_contract(RunSpec(dim=12), info)


def test_model_prompts_become_default_prefixes(make_tiny_bert, tmp_path):
    d = make_tiny_bert(tmp_path / "prompts")
    (d / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "query: ", "passage": "passage: "}})
    )
    c = build_contract(RunSpec(), resolve_model(str(d)))
    assert (c.query_prefix, c.doc_prefix) == ("query: ", "passage: ")
    c2 = build_contract(RunSpec(query_prefix=""), resolve_model(str(d)))
    assert c2.query_prefix == ""


def test_render_is_the_one_place_a_text_becomes_a_model_input():
    c = _c(query_prefix="query: ", doc_prefix="passage: ")
    assert c.render("query", "bread") == "query: bread"
    assert c.render("document", "bread") == "passage: bread"
    assert c.render_all("query", ["a", ""]) == ["query: a", "query: "]
    with pytest.raises(SpecError):
        c.render("passage", "bread")


def test_the_builder_reads_only_what_a_contract_request_declares(make_tiny_bert, tmp_path):
    """The contract layer declares what it reads from a request (``ContractRequest``); ``RunSpec`` holds each member
    as a field, every retrieval setting among them, and a plain object holding only those members builds the very
    contract the ``RunSpec`` builds: the builder reads nothing else of the spec."""
    members = {name for name, value in vars(ContractRequest).items() if isinstance(value, property)}
    assert set(RETRIEVAL_SETTINGS) <= members <= {f.name for f in dataclasses.fields(RunSpec)}
    d = make_tiny_bert(tmp_path / "prompts")
    (d / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: "}}))
    info = resolve_model(str(d))
    spec = RunSpec.from_mapping(
        {
            "model": str(d),
            "model_name": "embedder",
            "pooling": "cls",
            "normalize": False,
            "query_prefix": "q: ",
            "doc_prefix": "d: ",
            "dim": 16,
            "max_length": 32,
            "dtype": "float16",
            "truncation": "reject",
            "index": "hnsw",
            "retrieval": "hybrid",
            "fuse": "dense+bm25",
            "fusion_k": 30,
            "bm25_k1": 1.2,
        },
        source="spec",
    )
    request = SimpleNamespace(**{name: getattr(spec, name) for name in members})
    built = build_contract(spec, info)
    assert build_contract(request, info).to_dict() == built.to_dict()
    assert (built.model, built.pooling, built.similarity, built.dim, built.max_length) == (
        "embedder",
        "cls",
        "dot",
        16,
        32,
    )
    assert (built.query_prefix, built.doc_prefix, built.dtype, built.truncation) == ("q: ", "d: ", "float16", "reject")
    assert built.retrieval.startswith("hybrid:fuse=dense+bm25") and "k=30" in built.retrieval
    assert built.index.startswith("hnsw")
    assert built.departures == (
        "pooling cls: the model declares mean (1_Pooling/config.json)",
        "normalize false: the model declares a Normalize module (modules.json)",
        "query prefix 'q: ': the model declares the 'query' prompt 'query: ' (config_sentence_transformers.json)",
    )
