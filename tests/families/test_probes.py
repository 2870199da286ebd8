"""The canary's probes on a decoder: the near-limit document fits the contract's max length counted with the
special tokens the family adds (an appended EOS); an all-zero vector for "" is judged, not a transport error."""

from __future__ import annotations

import numpy as np

from evalsuite.canary.embedding.checks.bad_input import _empty_string_answer
from evalsuite.encode.local import LocalEncoder
from evalsuite.model import resolve_model
from evalsuite.run import probes as probe_texts


def test_near_limit_probe_fits_with_the_eos_a_decoder_appends(family_dir):
    enc = LocalEncoder(resolve_model(str(family_dir("qwen3"))), device="cpu")

    def tokens(text: str) -> int:
        return len(enc.tokenizer(text, truncation=False)["input_ids"])

    assert enc.tokenizer("bread")["input_ids"][-1] == enc.tokenizer.eos_token_id  # the family appends EOS
    for max_length in (64, 128, 512):
        target = int(max_length * probe_texts.NEAR_LIMIT_SHARE)
        _, words_only = probe_texts.near_limit_document(max_length)
        assert tokens(words_only) > max_length  # sized by words, a byte-level BPE text runs over the limit
        _, sized = probe_texts.near_limit_document(max_length, tokens)
        assert target * 0.75 <= tokens(sized) <= target  # long, and inside the limit with its EOS
    _, plain = probe_texts.near_limit_document(128, lambda t: len(t.split()) + 30)  # fits: the text is unchanged
    assert plain == probe_texts.near_limit_document(128)[1]


def test_an_all_zero_vector_for_the_empty_string_is_a_named_departure():
    ref = np.array([[0.6, 0.8]], dtype=np.float32)
    zero = np.zeros((1, 2), dtype=np.float32)
    details: dict[str, object] = {}
    ok, said = _empty_string_answer(zero, ref, 0.99, "", details)
    assert not ok and details["empty_string_zero_vector"] is True
    assert "all-zero vector, but the reference's vector for '' is not zero" in said and "remedy:" in said
    ok, said = _empty_string_answer(zero, zero, 0.99, "", {})  # the model's own answer (its EOS embeds to zero)
    assert ok and "as the reference gives for ''" in said
    ok, said = _empty_string_answer(ref, ref, 0.99, "", {})
    assert ok and "cos 1.0000" in said
    ok, said = _empty_string_answer(np.array([[0.8, -0.6]], dtype=np.float32), ref, 0.99, "", {})
    assert not ok and "unlike the reference's" in said


def test_batch_dependence_under_last_token_pooling_points_at_the_padding():
    from evalsuite.canary.embedding.checks.agreement import padding_hint

    assert padding_hint("mean", "right") == ""  # other poolings: padding is not the first suspect
    hint = padding_hint("last", "left")
    assert "padding side" in hint and "pads on the left" in hint and "remedy:" in hint
    assert "tokenizer_config.json" not in padding_hint("last", None)
