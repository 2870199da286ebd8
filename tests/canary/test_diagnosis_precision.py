"""A server of the tiny model with its weights quantized as ggml's q4_0 does (blocks of 32, one scale each, 4-bit
values): the canary fails and its diagnosis names reduced precision, with no llama.cpp installed (the real q4_0
GGUF is tests/llamacpp/test_llamacpp_precision.py).

One-line bugs caught: the canary never asks for the precision judgement (it says "no hypothesis explains"), or
names it before every alternative is in (the forward-pass alternatives, model_dtype among them, must have been
tried).
"""

from __future__ import annotations

import shutil

import numpy as np

from evalsuite.canary.runner import run_canary


def ggml_block_quantized(weights: np.ndarray, bits: int) -> np.ndarray:
    """``weights`` rounded as ggml's q4_0 (``bits`` 4) or q8_0 (8) store them: each block of 32 values along a row
    keeps one scale, the value of largest magnitude mapped to the most negative level (ggml-quants.c)."""
    levels = 2 ** (bits - 1)
    blocks = weights.astype(np.float32).reshape(-1, 32)
    idx = np.abs(blocks).argmax(axis=1)
    peak = blocks[np.arange(len(blocks)), idx]
    d = np.where(peak != 0, peak / -levels, 1.0)[:, None]
    q = np.clip(np.floor(blocks / d + levels + 0.5), 0, 2 * levels - 1)
    out: np.ndarray = ((q - levels) * d).reshape(weights.shape).astype(weights.dtype)
    return out


def quantized_copy(src, dest, bits: int):
    from safetensors.numpy import load_file, save_file

    shutil.copytree(src, dest)
    tensors = load_file(str(src / "model.safetensors"))
    for name, w in tensors.items():
        if w.ndim == 2 and w.shape[1] % 32 == 0:  # matrices and embeddings; biases and norms stay float32
            tensors[name] = ggml_block_quantized(w, bits)
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    return dest


def serve(fault_server, tiny_info, path):
    from evalsuite.encode.local import LocalEncoder
    from evalsuite.model import resolve_model

    info = resolve_model(str(path))
    assert info.hidden_size == tiny_info.hidden_size
    served = LocalEncoder(info, device="cpu", max_length=tiny_info.default_max_length, progress=False)
    fault_server.encoders = lambda max_length: served


def test_q4_0_weights_are_named_reduced_precision(fault_server, make_context, tiny_info, tiny_model_dir, tmp_path):
    serve(fault_server, tiny_info, quantized_copy(tiny_model_dir, tmp_path / "q4_0", bits=4))
    # the tiny random model keeps cosine 0.996 through 4-bit weights: a strict threshold sees it
    outcome = run_canary(make_context(fault_server.url, min_cosine=0.9999))
    agreement = next(v for v in outcome.verdicts if v.check == "vector_agreement")
    assert agreement.passed is False, agreement.message
    [d] = outcome.diagnoses
    assert [c.factor for c in d.causes] == ["precision"], d.sentence()
    assert d.precision is not None and d.causes[0].value == round(d.precision.min_cosine, 4)
    assert d.precision.min_cosine <= agreement.details["min"] + 1e-6  # over the canary texts and the over-long one
    assert d.sentence().startswith("cause: the served vectors are made at lower precision than the reference's")
    tried = {f.label for f in d.ranked}
    assert {"model_dtype=float16", "model_dtype=bfloat16"} <= tried, sorted(tried)
