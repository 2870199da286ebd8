import json
import shutil

import numpy as np
import pytest

from evalsuite.base.errors import ModelError, SpecError, TruncationError
from evalsuite.encode.local import LocalEncoder, pick_device
from evalsuite.model import resolve_model
from evalsuite.retrieval.vectors import check_vectors, finalize

TEXTS = [
    "how does a database commit a transaction",
    "bread",
    "the ball game rule is the score of the team " * 3,
    "yeast dough",
    "planet orbit around the sun and the moon",
]


@pytest.fixture(scope="module")
def encoder(tiny_model_dir):
    return LocalEncoder(resolve_model(str(tiny_model_dir)), device="cpu", batch_size=2)


def _manual(tiny_model_dir, text, pooling):
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    model = AutoModel.from_pretrained(str(tiny_model_dir)).eval()
    enc = tok(text, return_tensors="pt", truncation=True, max_length=64)
    with torch.no_grad():
        h = model(**enc).last_hidden_state[0]
    return {"cls": h[0], "mean": h.mean(0), "last": h[-1]}[pooling].numpy()


@pytest.mark.parametrize("pooling", ["cls", "mean", "last"])
def test_pooling_matches_unbatched_forward(encoder, tiny_model_dir, pooling):
    out = encoder.encode(TEXTS, poolings=[pooling])[pooling]
    for i, text in enumerate(TEXTS):
        np.testing.assert_allclose(out[i], _manual(tiny_model_dir, text, pooling), atol=1e-5)


def test_one_pass_serves_every_pooling(encoder):
    together = encoder.encode(TEXTS, poolings=["cls", "mean", "last"])
    for p in ("cls", "mean", "last"):
        np.testing.assert_allclose(together[p], encoder.encode(TEXTS, poolings=[p])[p], atol=1e-6)
    assert not np.allclose(together["cls"], together["mean"])


def test_rows_follow_input_order_despite_length_batching(encoder):
    fwd = encoder.encode(TEXTS, poolings=["mean"])["mean"]
    rev = encoder.encode(TEXTS[::-1], poolings=["mean"])["mean"]
    np.testing.assert_allclose(fwd, rev[::-1], atol=1e-5)


def test_the_encoder_encodes_texts_as_given(encoder):
    plain = encoder.encode(["bread"], poolings=["mean"])["mean"]
    prefixed = encoder.encode(["query bread"], poolings=["mean"])["mean"]
    same = encoder.encode(["query bread"], poolings=["mean"])["mean"]
    assert not np.allclose(plain, prefixed)
    np.testing.assert_allclose(prefixed, same, atol=1e-6)


def test_truncation_is_counted(tiny_model_dir):
    enc = LocalEncoder(resolve_model(str(tiny_model_dir)), device="cpu", max_length=8)
    enc.encode(TEXTS, poolings=["mean"], role="document")
    stats = enc.stats_by_role["document"]
    assert stats.truncated == 3  # the long ones
    assert stats.tokens <= 8 * len(TEXTS) and stats.texts == len(TEXTS)


def test_truncation_reject_names_the_text(tiny_model_dir):
    enc = LocalEncoder(resolve_model(str(tiny_model_dir)), device="cpu", max_length=8, truncation="reject")
    with pytest.raises(TruncationError, match=r"text d1 has \d+ tokens, over max_length 8"):
        enc.encode(["bread", TEXTS[0]], poolings=["mean"], ids=["d0", "d1"])


def test_half_precision_runs_on_cpu_and_stays_close(tiny_model_dir, encoder):
    ref = finalize(encoder.encode(TEXTS, poolings=["mean"])["mean"], 32, True)
    for dtype in ("bfloat16", "float16"):
        enc = LocalEncoder(resolve_model(str(tiny_model_dir)), device="cpu", dtype=dtype)
        got = finalize(enc.encode(TEXTS, poolings=["mean"])["mean"], 32, True)
        assert got.dtype == np.float32
        assert (got * ref).sum(1).min() > 0.99


def test_device_choice():
    assert pick_device("cpu") == "cpu"
    import torch

    assert pick_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(SpecError, match="no CUDA device"):
            pick_device("cuda")


def test_remote_code_needs_explicit_consent(tiny_model_dir, tmp_path):
    d = shutil.copytree(tiny_model_dir, tmp_path / "remote")
    cfg = json.loads((d / "config.json").read_text())
    cfg["auto_map"] = {"AutoModel": "modeling_custom.CustomModel"}
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelError, match="--trust-remote-code"):
        LocalEncoder(resolve_model(str(d)), device="cpu")


def test_finalize_matryoshka_then_normalize():
    v = np.array([[3.0, 4.0, 12.0], [1.0, 0.0, 0.0]], dtype=np.float32)
    out = finalize(v, 2, True)
    np.testing.assert_allclose(out, [[0.6, 0.8], [1.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(finalize(v, 2, False), v[:, :2])
    with pytest.raises(ValueError):
        finalize(v, 4, True)


def test_check_vectors_reports_each_problem():
    v = np.array([[1, 0], [0, 0], [np.nan, 1], [2, 0]], dtype=np.float32)
    rep = check_vectors(v, dim=2, normalized=True)
    assert (rep.zero, rep.non_finite, rep.bad_norm, rep.wrong_dim) == ((1,), (2,), (3,), False)
    assert not rep.ok and len(rep.problems(["a", "b", "c", "d"])) == 3
    assert check_vectors(v[:1], dim=3, normalized=True).wrong_dim
    assert check_vectors(v[:1], dim=2, normalized=True).ok


def test_tokenizer_calls_are_bounded_in_texts_and_characters():
    """Bugs: groups bounded in texts only (a call held a whole corpus of long documents: 5.6 GB), a text lost or
    repeated at a group boundary, an empty group before an over-budget first text."""
    from evalsuite.encode.local import tokenize_groups

    lengths = [10, 10, 10, 50, 5, 5, 100, 1, 1, 1]
    groups = tokenize_groups(lengths, max_texts=3, max_chars=30)
    assert [list(g) for g in groups] == [[0, 1, 2], [3], [4, 5], [6], [7, 8, 9]]
    assert all(sum(lengths[i] for i in g) <= 30 or len(g) == 1 for g in groups)
    assert tokenize_groups([], max_texts=3, max_chars=30) == []
    assert [list(g) for g in tokenize_groups([50, 1], max_texts=3, max_chars=30)] == [[0], [1]]
    assert [len(g) for g in tokenize_groups([1] * 10, max_texts=4, max_chars=100)] == [4, 4, 2]


def test_grouped_tokenization_gives_the_same_ids_and_truncation_flags(tiny_model_dir, monkeypatch):
    """Bug: a group's rows or truncation flags written at the wrong offset once texts span several calls."""
    from evalsuite.encode import local

    enc = LocalEncoder(resolve_model(str(tiny_model_dir)), device="cpu", max_length=8)
    texts = [" ".join(["index"] * n) for n in (3, 20, 1, 9, 40, 2, 7, 15)]
    whole = enc._tokenize(texts, None)
    real = local.tokenize_groups
    monkeypatch.setattr(local, "tokenize_groups", lambda lengths: real(lengths, max_texts=3, max_chars=60))
    assert len(real([len(t) for t in texts], max_texts=3, max_chars=60)) > 3
    grouped = enc._tokenize(texts, None)
    assert [x.tolist() for x in grouped] == [x.tolist() for x in whole]
    flat, offsets, truncated = whole
    for i, text in enumerate(texts):  # text i's ids are its slice of the flat array, as the tokenizer gives them
        expected = enc.tokenizer(text, truncation=True, max_length=8)["input_ids"]
        assert flat[offsets[i] : offsets[i + 1]].tolist() == expected
    assert truncated.tolist() == [False, True, False, True, True, False, True, True]  # [CLS] and [SEP] count
