"""Items that pin comparability and vector integrity, each failing on the fault it names (pytester,
tiny random BERT)."""

import json
import shutil

import pytest

from .conftest import plugin_args as _args


@pytest.mark.parametrize(
    "field, path, message",
    [
        ("dataset sha256", ("dataset", "sha256"), "dataset sha256: baseline 0000000000000000…, candidate "),
        ("model revision", ("manifest", "contract", "model_revision"), "model_revision: baseline '1111"),
        ("tokenizer revision", ("manifest", "contract", "tokenizer_revision"), "tokenizer_revision: baseline '2222"),
    ],
)
def test_the_contract_item_fails_on_a_baseline_from_elsewhere(
    run_evalsuite, pytester, tiny_model_dir, small_beir, field, path, message
):
    baseline = pytester.path / "b.json"
    pytester.runpytest(
        *_args(tiny_model_dir, small_beir, "--update-baseline", "--baseline", str(baseline))
    ).assert_outcomes(passed=2)
    same = pytester.runpytest(*_args(tiny_model_dir, small_beir, "--baseline", str(baseline), "-k", "contract"))
    same.assert_outcomes(passed=1)
    data = json.loads(baseline.read_text())
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = {"sha256": "0" * 64, "model_revision": "1" * 64, "tokenizer_revision": "2" * 64}[path[-1]]
    baseline.write_text(json.dumps(data))
    run = pytester.runpytest(*_args(tiny_model_dir, small_beir, "--baseline", str(baseline), "-k", "contract"))
    assert run.ret == 1, field
    run.assert_outcomes(failed=1)
    out = run.stdout.str()
    assert "contract differs from the baseline" in out and message in out, out
    assert "Not intended: that is the fault" in out and "deltas first; only if they are acceptable" in out


def _broken_copy(tiny_model_dir, dest, how):
    """The tiny model with weights that make every vector NaN, or every vector zero."""
    import torch
    from transformers import BertModel

    shutil.copytree(tiny_model_dir, dest)
    model = BertModel.from_pretrained(str(dest))
    with torch.no_grad():
        if how == "nan":
            model.embeddings.word_embeddings.weight.fill_(float("nan"))
        else:  # the last layer's output LayerNorm scaled to zero: every hidden state is 0
            model.encoder.layer[-1].output.LayerNorm.weight.zero_()
            model.encoder.layer[-1].output.LayerNorm.bias.zero_()
    model.save_pretrained(str(dest))
    return dest


@pytest.mark.parametrize("stored", [(), ("--chunk-size", "2", "--block-rows", "4")], ids=["in-memory", "block-wise"])
@pytest.mark.parametrize(
    "how, message", [("nan", "vector(s) with non-finite values"), ("zero", "vector(s) with zero vector")]
)
def test_the_integrity_item_fails_on_nan_and_zero_vectors(
    pytester, tiny_model_dir, small_beir, tmp_path, how, message, stored
):
    broken = _broken_copy(tiny_model_dir, tmp_path / how, how)
    run = pytester.runpytest(*_args(broken, small_beir, "--gate", "ndcg@10>=0.0", "-k", "integrity", *stored))
    assert run.ret == 1
    run.assert_outcomes(failed=1)
    out = run.stdout.str()
    assert "vector integrity: query vectors: 3 " + message in out
    assert "document vectors: 6 " + message in out
    healthy = pytester.runpytest(
        *_args(tiny_model_dir, small_beir, "--gate", "ndcg@10>=0.0", "-k", "integrity", *stored)
    )
    healthy.assert_outcomes(passed=1)
