"""The reranker canary's settings are declared like CanarySettings: options, help defaults and bounds read the
dataclass (one place), and a value out of bounds is a usage error naming the field."""

from __future__ import annotations

import dataclasses

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.canary.embedding.options import CANARY_OPTIONS
from evalsuite.canary.reranker.options import RERANK_CANARY_OPTIONS
from evalsuite.canary.reranker.settings import API_NAMES, RerankCanarySettings
from evalsuite.rerank.shapes import APIS


def test_api_names_are_the_shapes_the_client_knows():
    assert tuple(APIS) == API_NAMES


def test_every_option_sets_a_declared_field_and_shows_its_default():
    declared = RerankCanarySettings.option_fields()
    options = {o.dest: o for o in (*RERANK_CANARY_OPTIONS, *CANARY_OPTIONS)}
    assert set(declared) <= set(options)  # every declared option exists (api_key_env: the embedding canary's)
    assert {o.dest for o in RERANK_CANARY_OPTIONS} <= set(declared)
    defaults = {f.name: f.default for f in dataclasses.fields(RerankCanarySettings)}
    assert options["reranker_tau_min"].help_text().endswith(f"(default: {defaults['tau_min']})")
    assert options["reranker_canary_depth"].help_text().endswith(f"(default: {defaults['depth']})")
    assert "(default" not in options["reranker_endpoint"].help_text()  # required, no default to show


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("tau_min", 1.5, "reranker canary tau_min must be in [-1, 1], got 1.5"),
        ("depth", 0, "reranker canary depth must be in [1, inf), got 0"),
        ("score_tol", -0.1, "reranker canary score_tol must be in [0, inf)"),
        ("deadline", 0.0, "reranker canary deadline must be in (0, inf)"),
        ("metric_tol", float("nan"), "reranker canary metric_tol must be in [0, inf), got nan"),
        ("api", "cohere", "reranker API 'cohere' is not valid; choose one of rerank, tei, score"),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_the_field(field, value, message):
    with pytest.raises(SpecError) as info:
        RerankCanarySettings(endpoint="http://127.0.0.1:9/v1", **{field: value})
    assert message in str(info.value)


def test_from_values():
    assert RerankCanarySettings.from_values({"reranker_tau_min": 0.5}) is None  # no --reranker-endpoint: no canary
    s = RerankCanarySettings.from_values({"reranker_endpoint": "http://h:1/v1", "reranker_tau_min": 0.5})
    assert s is not None and s.tau_min == 0.5 and s.depth == 20 and s.to_dict()["endpoint"] == "http://h:1/v1"
    with pytest.raises(SpecError, match="unknown reranker canary setting"):
        RerankCanarySettings.from_values({"reranker_endpoint": "http://h:1/v1", "tau": 0.5})
