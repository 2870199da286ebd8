"""The reranker contract: defaults from what the model declares, validation, rendering, activation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsuite.base.errors import ModelError, SpecError
from evalsuite.rerank.contract import RerankerContract, activate, build_reranker_contract, declared_activation


def contract(**kw: object) -> RerankerContract:
    base = dict(
        model="m",
        model_revision="r" * 64,
        tokenizer_revision="t" * 64,
        activation="sigmoid",
        template="pair",
        max_length=64,
    )
    base.update(kw)
    return RerankerContract(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "config, expected",
    [
        ({"sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Sigmoid"}}, "sigmoid"),
        ({"sentence_transformers": {"activation_fn": "torch.nn.modules.linear.Identity"}}, "none"),
        ({"sbert_ce_default_activation_function": "torch.nn.modules.linear.Identity"}, "none"),
        ({}, "sigmoid"),
    ],
)
def test_declared_activation(config, expected):
    assert declared_activation(config) == expected


def test_unknown_declared_activation_is_a_model_error_naming_the_flag():
    with pytest.raises(ModelError, match=r"Tanh.*--reranker-activation"):
        declared_activation({"sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Tanh"}})


def test_activation_values():
    x = np.array([-2.0, 0.0, 3.0])
    assert np.allclose(activate(x, "none"), x)
    assert np.allclose(activate(x, "sigmoid"), [1 / (1 + np.exp(2)), 0.5, 1 / (1 + np.exp(-3))])


def test_contract_defaults_come_from_the_model(cross_encoder_dir, tmp_path, copy_dir):
    from evalsuite.model import resolve_model

    info = resolve_model(str(cross_encoder_dir))
    c = build_reranker_contract(info)
    assert (c.activation, c.template, c.max_length, c.model_revision) == ("sigmoid", "pair", 128, info.revision)
    ident = copy_dir(cross_encoder_dir, tmp_path / "identity")
    cfg = json.loads((ident / "config.json").read_text())
    cfg["sentence_transformers"] = {"activation_fn": "torch.nn.modules.linear.Identity"}
    (ident / "config.json").write_text(json.dumps(cfg))
    assert build_reranker_contract(resolve_model(str(ident))).activation == "none"
    assert build_reranker_contract(resolve_model(str(ident)), activation="sigmoid").activation == "sigmoid"
    with pytest.raises(SpecError, match="exceeds what the model supports"):
        build_reranker_contract(info, max_length=4096)


def test_a_classifier_with_two_labels_is_not_a_reranker(cross_encoder_dir, tmp_path, copy_dir):
    from evalsuite.model import resolve_model

    two = copy_dir(cross_encoder_dir, tmp_path / "two")
    cfg = json.loads((two / "config.json").read_text())
    cfg["id2label"] = {"0": "no", "1": "yes"}
    (two / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelError, match="num_labels=1"):
        build_reranker_contract(resolve_model(str(two)))


def test_template_validation_and_rendering():
    assert contract().render("q", "d") == ("q", "d")
    assert contract(template="query: {query} document: {document}").render("q", "d") == ("query: q document: d", None)
    with pytest.raises(SpecError, match="lacks \\{document\\}"):
        contract(template="query: {query}")
    with pytest.raises(SpecError, match="only_second"):
        contract(template="{query} {document}", truncation="only_second")
    with pytest.raises(SpecError, match="activation"):
        contract(activation="softmax")


def test_forward_key_ignores_only_the_activation():
    a = contract()
    assert a.forward_key() == a.replace(activation="none").forward_key()
    for change in ({"max_length": 32}, {"dtype": "bfloat16"}, {"template": "{query} {document}"}):
        assert a.replace(**change).forward_key() != a.forward_key()
    assert a.diff(a.replace(dtype="float16")) == {"dtype": ("float32", "float16")}
    assert RerankerContract.from_dict(a.to_dict()) == a
