"""One settings object for every encoder a run builds: made once from the decided spec and the contract, and the
same model whichever way it is built."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evalsuite.encode.executors import Execution, build_encoder
from evalsuite.encode.local import LocalEncoder
from evalsuite.encode.settings import EncoderSettings
from evalsuite.run.pipeline import make_encoder, prepare
from evalsuite.run.prepared import encoder_settings
from evalsuite.run.spec import RunSpec


def test_the_settings_come_from_the_decided_spec_and_the_contract(tiny_model_dir: Path, small_beir: Path) -> None:
    spec = RunSpec(
        model=str(tiny_model_dir), dataset=str(small_beir), device="cpu", batch_size=3, max_length=12, use_cache=False
    )
    prepared = prepare(spec)
    c = prepared.contract
    assert encoder_settings(prepared) == EncoderSettings(
        dtype=c.dtype, device="cpu", max_length=12, truncation=c.truncation, batch_size=3, trust_remote_code=False
    )
    assert encoder_settings(prepared, dtype="bfloat16", max_length=7).max_length == 7
    encoder = make_encoder(prepared)
    assert isinstance(encoder, LocalEncoder)
    assert (encoder.dtype, encoder.device, encoder.max_length, encoder.batch_size) == ("float32", "cpu", 12, 3)


def test_built_from_settings_is_the_model_built_from_keywords(tiny_model_dir: Path) -> None:
    from evalsuite.model import resolve_model

    info = resolve_model(str(tiny_model_dir))
    texts = ["a short text", "a somewhat longer text that the max length cuts"]
    settings = EncoderSettings(device="cpu", max_length=6, batch_size=1)
    built = build_encoder(info, Execution(), settings)
    direct = LocalEncoder(info, device="cpu", max_length=6, batch_size=1, progress=False)
    assert isinstance(built, LocalEncoder) and built.max_length == 6 and built.batch_size == 1
    got = built.encode(texts, poolings=["mean"])["mean"]
    np.testing.assert_array_equal(got, direct.encode(texts, poolings=["mean"])["mean"])
    assert built.stats_by_role["document"].truncated == direct.stats_by_role["document"].truncated >= 1
