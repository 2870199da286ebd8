"""The local reranker reference against sentence-transformers' CrossEncoder (an independent implementation)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from evalsuite.base.errors import ModelError, TruncationError
from evalsuite.encode.batches import length_batches
from evalsuite.model import resolve_model
from evalsuite.rerank.contract import build_reranker_contract
from evalsuite.rerank.local import LocalReranker

PAIRS = [
    ("how does a database commit a transaction", "A transaction commit makes every write durable."),
    ("how does a database commit a transaction", "Yeast makes bread dough rise in a warm oven."),
    ("why does bread dough rise", "Yeast makes bread dough rise in a warm oven."),
    ("why does bread dough rise", "The star player read the rule book of the court."),
    ("how does a basketball team score", "A team scores when the ball goes through the basket."),
    ("planet orbit", "the moon orbits the planet " * 30),
]


@pytest.fixture(scope="module")
def info(cross_encoder_dir):
    from evalsuite.model import resolve_model

    return resolve_model(str(cross_encoder_dir))


def test_scores_match_sentence_transformers_cross_encoder(info, cross_encoder_dir):
    from sentence_transformers import CrossEncoder

    ref = CrossEncoder(str(cross_encoder_dir), device="cpu").predict(PAIRS)
    ours = LocalReranker(info, build_reranker_contract(info), device="cpu").score(PAIRS)
    assert np.abs(ours - ref).max() < 1e-5
    assert np.ptp(ours) > 0.05  # the fixture's scores vary across pairs


def test_activation_none_returns_the_logit(info):
    sig = LocalReranker(info, build_reranker_contract(info), device="cpu")
    raw = LocalReranker(info, build_reranker_contract(info, activation="none"), device="cpu")
    logits = raw.score(PAIRS)
    assert np.allclose(sig.score(PAIRS), 1 / (1 + np.exp(-logits)), atol=1e-9)


def test_batching_by_length_does_not_change_scores_or_their_order(info):
    c = build_reranker_contract(info)
    one = LocalReranker(info, c, device="cpu", batch_size=1).score(PAIRS)
    many = LocalReranker(info, c, device="cpu", batch_size=4, max_batch_tokens=200)
    assert np.allclose(many.score(PAIRS), one, atol=1e-5)
    assert np.allclose(many.score(PAIRS[::-1]), one[::-1], atol=1e-5)
    assert many.stats.batches > 2 and many.stats.padded_tokens >= many.stats.tokens


def test_length_batches_respect_the_budget_and_cover_every_index():
    lengths = np.array([5, 40, 7, 40, 3, 12, 30])
    batches = length_batches(lengths, batch_size=3, max_batch_tokens=80)
    assert sorted(int(i) for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) <= 3 and lengths[b].max() * len(b) <= 80
    assert list(batches[0]) == [1, 3]  # longest first


def test_truncation_counted_and_reject_refuses(info):
    c = build_reranker_contract(info, max_length=40)
    r = LocalReranker(info, c, device="cpu")
    r.score(PAIRS)
    assert r.stats.truncated == 1
    with pytest.raises(TruncationError, match=r"pair p5 has .* tokens, over the reranker max_length 40"):
        LocalReranker(info, c.replace(truncation="reject"), device="cpu").score(PAIRS, [f"p{i}" for i in range(6)])


def test_only_second_keeps_the_whole_query(info):
    c = build_reranker_contract(info, max_length=24, truncation="only_second")
    r = LocalReranker(info, c, device="cpu")
    ids, _, cut = r.tokenize([("planet orbit around the sun", "the moon orbits the planet " * 30)])
    assert cut == 1 and len(ids[0]) == 24
    assert r.tokenizer.decode(ids[0]).startswith("[CLS] planet orbit around the sun [SEP]")


def test_template_renders_one_text(info):
    c = build_reranker_contract(info, template="{query} [SEP] {document}")
    r = LocalReranker(info, c, device="cpu")
    ids, types, _ = r.tokenize([("why does bread rise", "yeast makes dough rise")])
    assert ids[0] == r.tokenizer("why does bread rise [SEP] yeast makes dough rise")["input_ids"]
    assert set(types[0]) == {0}  # one segment


def test_remote_code_and_a_foreign_revision_are_refused(cross_encoder_dir, tmp_path, info):
    d = shutil.copytree(cross_encoder_dir, tmp_path / "remote")
    cfg = json.loads((d / "config.json").read_text())
    cfg["auto_map"] = {"AutoModelForSequenceClassification": "modeling_custom.Custom"}
    (d / "config.json").write_text(json.dumps(cfg))
    remote = resolve_model(str(d))
    with pytest.raises(ModelError, match=r"this reranker needs custom code.*--trust-remote-code"):
        LocalReranker(remote, build_reranker_contract(remote), device="cpu")
    with pytest.raises(ModelError, match="pins revision"):
        LocalReranker(remote, build_reranker_contract(info), device="cpu")
