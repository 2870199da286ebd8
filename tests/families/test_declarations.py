"""What a family's directory declares, as evalsuite reads it: both Pooling config forms, --pooling over a
declaration it cannot run, overrides announced as contract departures (console and report), prompt names in the
contract, refusals naming the module, cache keys that grow with what a family adds, the sweep's pooling axis."""

from __future__ import annotations

import json
import shutil

import pytest

from evalsuite.base.errors import ModelError, SpecError
from evalsuite.contract import POOLINGS, Contract, build_contract
from evalsuite.model import resolve_model
from evalsuite.run.spec import RunSpec


def _pooling_cfg(d, **cfg):
    (d / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 32, **cfg}))


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        ({"pooling_mode": "lasttoken"}, "last"),  # what current sentence-transformers saves
        ({"pooling_mode": "mean_sqrt_len_tokens"}, "mean_sqrt_len"),
        ({"pooling_mode": ["weightedmean"]}, "weightedmean"),
        ({"pooling_mode_max_tokens": True, "pooling_mode_mean_tokens": False}, "max"),  # the per-mode booleans
        ({"pooling_mode_cls_token": True}, "cls"),
    ],
)
def test_both_pooling_config_forms_are_read(tiny_model_dir, tmp_path, cfg, expected):
    d = shutil.copytree(tiny_model_dir, tmp_path / "m")
    _pooling_cfg(d, **cfg)
    info = resolve_model(str(d))
    assert info.declared_pooling == expected and info.pooling_problem is None
    c = build_contract(RunSpec(model=str(d)), info)
    assert c.pooling == expected and c.departures == ()


@pytest.mark.parametrize(
    "cfg", [{"pooling_mode": ["cls", "mean"]}, {"pooling_mode": "median"}, {"pooling_mode_cls_token": False}]
)
def test_an_unreadable_declaration_is_refused_unless_pooling_is_given(tiny_model_dir, tmp_path, cfg):
    d = shutil.copytree(tiny_model_dir, tmp_path / "m")
    _pooling_cfg(d, **cfg)
    info = resolve_model(str(d))  # resolving succeeds: --pooling may still choose
    with pytest.raises(SpecError, match=r"1_Pooling/config.json: declares .*pass --pooling"):
        build_contract(RunSpec(model=str(d)), info)
    c = build_contract(RunSpec(model=str(d), pooling="last"), info)
    assert c.pooling == "last"
    assert c.departures == ("pooling last: --pooling chosen because the model's pooling declaration cannot be run",)


def test_overrides_of_declarations_are_departures(family_dir):
    d = family_dir("xlmr")  # mean pooling, Normalize, query: / passage: prompts
    info = resolve_model(str(d))
    same = build_contract(RunSpec(model=str(d), pooling="mean", normalize=True, query_prefix="query: "), info)
    assert same.departures == ()  # restating a declaration departs from nothing
    c = build_contract(
        RunSpec(model=str(d), pooling="cls", normalize=False, similarity="dot", doc_prefix="", query_prefix="q: "),
        info,
    )
    assert c.departures == (
        "pooling cls: the model declares mean (1_Pooling/config.json)",
        "normalize false: the model declares a Normalize module (modules.json)",
        "query prefix 'q: ': the model declares the 'query' prompt 'query: ' (config_sentence_transformers.json)",
        "document prefix '': the model declares the 'passage' prompt 'passage: ' (config_sentence_transformers.json)",
    )
    assert c.query_prompt is None and c.doc_prompt is None  # no declared prompt was applied
    back = Contract.from_dict(json.loads(json.dumps(c.to_dict())))
    assert back.departures == c.departures
    assert c.fingerprint() == c.replace(departures=()).fingerprint()  # a record, not what makes a vector


def test_prompt_names_applied_are_in_the_contract(family_dir, tiny_model_dir):
    xlmr = build_contract(RunSpec(model=str(family_dir("xlmr"))), resolve_model(str(family_dir("xlmr"))))
    assert (xlmr.query_prompt, xlmr.query_prefix) == ("query", "query: ")
    assert (xlmr.doc_prompt, xlmr.doc_prefix) == ("passage", "passage: ")
    assert xlmr.to_dict()["doc_prompt"] == "passage"
    qwen = build_contract(RunSpec(model=str(family_dir("qwen3"))), resolve_model(str(family_dir("qwen3"))))
    assert qwen.doc_prompt == "document" and qwen.doc_prefix == "" and qwen.query_prefix.startswith("Instruct: ")
    plain = build_contract(RunSpec(model=str(tiny_model_dir)), resolve_model(str(tiny_model_dir)))
    assert "query_prompt" not in plain.to_dict() and "departures" not in plain.to_dict()  # older contracts unchanged


def test_run_announces_departures_on_the_console_and_in_the_report(family_dir, small_beir, tmp_path, capsys):
    from evalsuite.cli import main

    out = tmp_path / "out"
    args = ["--pooling", "max", "--device", "cpu", "--no-cache", "--out", str(out)]
    rc = main(["run", "--model", str(family_dir("xlmr")), "--dataset", str(small_beir), *args])
    assert rc == 0
    err = capsys.readouterr().err
    assert "evalsuite: contract departure: pooling max: the model declares mean (1_Pooling/config.json)" in err
    report = (out / "report.md").read_text()
    assert "Departures from the model's declaration" in report and "pooling max: the model declares mean" in report


def test_dense_head_sets_the_output_dimension_and_the_cache_key(family_dir, tiny_model_dir):
    from evalsuite.encode.cache import ShardKey
    from evalsuite.encode.cached import CachedEncoder
    from evalsuite.encode.settings import EncoderSettings

    info = resolve_model(str(family_dir("dense")))
    assert info.hidden_size == 16 and [h.activation for h in info.dense] == ["Tanh", "Identity"]
    assert info.head_key().count("dense=") == 2

    def key(info, pooling="mean"):
        settings = EncoderSettings(dtype="float32", device="cpu", max_length=64, truncation="truncate")
        enc = CachedEncoder(None, info, settings=settings, factory=None)  # type: ignore[arg-type]
        return enc.key(pooling, "query")

    assert key(info).head == info.head_key()
    changed = info.__class__(**{**info.__dict__, "dense": info.dense[:1]})
    assert key(changed).digest() != key(info).digest()
    plain = resolve_model(str(tiny_model_dir))
    k = key(plain)  # a plain encoder's key digest is what it was before families (existing caches stay valid)
    fields = {
        "model_revision": k.model_revision,
        "tokenizer_revision": k.tokenizer_revision,
        "dtype": "float32",
        "max_length": 64,
        "truncation": "truncate",
        "pooling": "mean",
        "role": "query",
        "dim": 32,
    }
    import hashlib

    assert k.digest() == hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:32]
    assert k == ShardKey(**fields)  # type: ignore[arg-type]
    no_prompt = resolve_model(str(family_dir("no_prompt_pooling")))
    assert no_prompt.head_key() == "include_prompt=false"


def test_modules_it_cannot_run_are_refused_naming_them(family_dir, tmp_path):
    d = shutil.copytree(family_dir("dense"), tmp_path / "m")
    cfg = json.loads((d / "2_Dense" / "config.json").read_text())
    (d / "2_Dense" / "config.json").write_text(json.dumps({**cfg, "activation_function": "my.pkg.Swish"}))
    with pytest.raises(ModelError, match=r"activation_function 'my.pkg.Swish' .*Tanh.*--endpoint"):
        resolve_model(str(d))
    (d / "2_Dense" / "config.json").write_text(json.dumps({**cfg, "in_features": 31}))
    with pytest.raises(ModelError, match="in_features 31 does not match the vector before it"):
        resolve_model(str(d))
    modules = json.loads((d / "modules.json").read_text())
    modules.insert(1, {"idx": 9, "name": "9", "path": "", "type": "sentence_transformers.models.WordWeights"})
    (d / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ModelError, match=r"'sentence_transformers.models.WordWeights' is not supported"):
        resolve_model(str(d))


def test_sweep_pooling_axis_offers_every_pooling():
    from evalsuite.sweep.axes import parse_axis

    axis = parse_axis("pooling=max,weightedmean,mean_sqrt_len,last")
    assert [v.value for v in axis.values] == ["max", "weightedmean", "mean_sqrt_len", "last"]
    assert set(POOLINGS) == {"cls", "mean", "last", "max", "weightedmean", "mean_sqrt_len"}


def test_cache_segments_written_before_the_head_field_still_decode(tmp_path):
    """A plain encoder's shard keeps its directory (digest) and its segments (written without ``head``)."""
    import dataclasses

    import numpy as np

    from evalsuite.encode.cache import ShardKey
    from evalsuite.encode.segments import decode_segment, encode_segment

    key = ShardKey("m" * 64, "t" * 64, "float32", 64, "truncate", "mean", "query", 2)
    old_fields = [(f.name, f.type) for f in dataclasses.fields(ShardKey) if f.name != "head"]
    OldKey = dataclasses.make_dataclass("OldKey", old_fields, frozen=True)
    old = OldKey(**{n: getattr(key, n) for n, _ in old_fields})
    data = encode_segment(old, [b"h" * 16], np.ones((1, 2), dtype=np.float32))
    assert decode_segment(tmp_path / "s.seg", data, key).vectors.tolist() == [[1.0, 1.0]]
    dense = ShardKey(**{**dataclasses.asdict(key), "head": "dense=abc"})
    with pytest.raises(ValueError, match="another cache key"):
        decode_segment(tmp_path / "s.seg", data, dense)


def test_canary_announces_departures_too(family_dir, small_beir, tmp_path, capsys):
    from evalsuite.cli import main

    model = ["--model", str(family_dir("xlmr")), "--dataset", str(small_beir), "--pooling", "max"]
    # stops right after the contract is built (a usage error: 999 dimensions of 32), before any request
    rc = main(["canary", "--endpoint", "http://127.0.0.1:9/v1", *model, "--canary-dimensions", "999"])
    assert rc == 2
    assert "evalsuite: contract departure: pooling max: the model declares mean" in capsys.readouterr().err


def test_overriding_the_default_prompt_is_a_departure(family_dir, tmp_path):
    from evalsuite.testing.tiny_families import RETRIEVAL_PROMPT

    d = family_dir("default_prompt")  # a 'query' prompt, and default_prompt_name 'retrieval' for the rest
    info = resolve_model(str(d))
    assert info.default_prompt_name == "retrieval"
    c = build_contract(RunSpec(model=str(d), doc_prefix=""), info)
    assert c.departures == (
        f"document prefix '': the model declares the 'retrieval' prompt {RETRIEVAL_PROMPT!r} "
        "(config_sentence_transformers.json, its default_prompt_name)",
    )
    assert c.doc_prompt is None and c.doc_prefix == ""
    assert build_contract(RunSpec(model=str(d), doc_prefix=RETRIEVAL_PROMPT), info).departures == ()
    bad = shutil.copytree(d, tmp_path / "m")
    cfg = json.loads((bad / "config_sentence_transformers.json").read_text())
    (bad / "config_sentence_transformers.json").write_text(json.dumps({**cfg, "default_prompt_name": "search"}))
    with pytest.raises(ModelError, match=r"config_sentence_transformers.json: default_prompt_name 'search' names no"):
        resolve_model(str(bad))
    # sentence-transformers 6 knows an implicit empty 'document' prompt, so it loads this one (applying nothing)
    (bad / "config_sentence_transformers.json").write_text(json.dumps({**cfg, "default_prompt_name": "document"}))
    plain = build_contract(RunSpec(model=str(bad)), resolve_model(str(bad)))
    assert (plain.doc_prompt, plain.doc_prefix) == (None, "")
