"""A model with Dense heads after pooling, served with the heads dropped (TEI#732, vLLM#15509): the diagnosis names the
dropped head, whether its vectors come back at the transformer's hidden size (a width the contract does not have) or
at the right size from the wrong layer (heads that end at the width they began with, as embeddinggemma's)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from evalsuite.canary.diagnosis import diagnosis_for
from evalsuite.canary.embedding.registry import run_check
from evalsuite.testing import tiny_families

from .fault_server import serving

# (Dense heads, the width the served vectors have with them dropped)
CASES = {
    "hidden_size": ((24, "Tanh"), (16, "Identity")),  # the family's own: 32 -> 24 -> 16, dropped: 32
    "right_size": ((48, "Tanh"), (32, "Identity")),  # 32 -> 48 -> 32, dropped: 32 as well
}


@pytest.fixture(params=sorted(CASES))
def headless_server(request, tmp_path_factory, monkeypatch, canary_dataset):
    """(prepared, URL): the tiny dense model as the contract, a fault server serving it with its Dense heads dropped."""
    from evalsuite.encode.local import LocalEncoder
    from evalsuite.model import resolve_model
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    family = dataclasses.replace(tiny_families.FAMILIES["dense"], name=request.param, dense=CASES[request.param])
    monkeypatch.setitem(tiny_families.FAMILIES, request.param, family)
    model_dir = tiny_families.write_family(request.param, tmp_path_factory.mktemp("dense") / request.param)
    info = resolve_model(str(model_dir))
    transformer = json.loads((model_dir / "config.json").read_text())["hidden_size"]
    assert info.hidden_size == CASES[request.param][-1][0] and transformer == 32

    served_info = dataclasses.replace(info, dense=(), hidden_size=transformer)  # what the engine runs: no Dense

    def headless(max_length: int) -> LocalEncoder:
        return LocalEncoder(served_info, device="cpu", max_length=max_length, progress=False)

    prepared = prepare(RunSpec(model=str(model_dir), dataset=str(canary_dataset), device="cpu", use_cache=False))
    with serving(headless, transformer, info.default_max_length) as server:
        server.latency = 0.0
        yield request.param, prepared, server.url


def test_a_dropped_dense_head_is_named_with_its_remedy(headless_server, make_context):
    case, prepared, url = headless_server
    ctx = make_context(url, prepared=prepared)
    v = run_check("vector_agreement", ctx)
    assert v.passed is False, v.message
    if case == "hidden_size":  # the client refuses the width; the diagnosis asks again at the width served
        assert "vector has 32 dimensions, expected 16" in v.message, v.message
    found = diagnosis_for(ctx, v)
    assert found is not None and found.explained, None if found is None else found.sentence()
    assert [(c.factor, c.value) for c in found.causes] == [("head", "dropped")], found.sentence()
    assert found.best.max_difference < 1e-4
    sentence = found.sentence()
    assert "the server drops the model's Dense head" in sentence and "2_Dense" in sentence
