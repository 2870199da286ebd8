"""The reference without its closing special token (evalsuite/encode/closing_token.py), on the tiny BERT.

``no_closing``: every text loses its [SEP]; ``cut``: only texts over max_length do, keeping exactly the first
max_length tokens of the full tokenization (what llama-cpp-python's ``tokens[:n_batch]`` keeps). Checked against
the tokenizer itself and an unbatched forward pass. Bugs caught: the wrong token dropped, a cut one token short
or long, short texts losing [SEP] under ``cut``, offsets not shifted after a drop.
"""

from __future__ import annotations

import numpy as np
import pytest

from evalsuite.encode.closing_token import ClosingTokenEncoder, closing_token_id
from evalsuite.model import resolve_model

LIMIT = 16
TEXTS = ["bread", "how does a database commit a transaction", "the ball game rule is the score of the team " * 4]


@pytest.fixture(scope="module")
def info(tiny_model_dir):
    return resolve_model(str(tiny_model_dir))


def rows(encoder, texts):
    flat, offsets, _ = encoder._tokenize(texts, None)
    return [flat[offsets[i] : offsets[i + 1]].tolist() for i in range(len(texts))]


@pytest.mark.parametrize("mode", ["no_closing", "cut"])
def test_the_closing_token_is_dropped_as_the_mode_says(info, mode):
    enc = ClosingTokenEncoder(info, mode=mode, device="cpu", max_length=LIMIT, progress=False)
    tok = enc.tokenizer
    sep = closing_token_id(tok)
    assert sep == tok.sep_token_id
    for text, got in zip(TEXTS, rows(enc, TEXTS), strict=True):
        full = tok(text)["input_ids"]
        if mode == "cut":
            want = full if len(full) <= LIMIT else full[:LIMIT]
        else:
            want = full[:-1][:LIMIT]
        assert got == want, (text, got, want)
    assert rows(enc, TEXTS)[0][-1] == (
        sep if mode == "cut" else tok("bread", add_special_tokens=False)["input_ids"][-1]
    )


def test_the_vectors_are_the_forward_pass_of_those_tokens(info, tiny_model_dir):
    import torch
    from transformers import AutoModel

    enc = ClosingTokenEncoder(info, mode="cut", device="cpu", max_length=LIMIT, progress=False)
    got = enc.encode(TEXTS, poolings=["mean"])["mean"]
    model = AutoModel.from_pretrained(str(tiny_model_dir)).eval()
    for text, vec in zip(TEXTS, got, strict=True):
        ids = enc.tokenizer(text)["input_ids"][:LIMIT]
        with torch.no_grad():
            h = model(input_ids=torch.tensor([ids])).last_hidden_state[0]
        np.testing.assert_allclose(vec, h.mean(0).numpy(), rtol=1e-4, atol=1e-5)
