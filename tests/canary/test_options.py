"""Canary options: parsed once, shared by the CLI and the plugin, bad values rejected with a message."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.canary.embedding.options import CANARY_OPTIONS
from evalsuite.canary.embedding.settings import CanarySettings
from evalsuite.run.options import add_options, collect


def parse(*argv: str, prefix: str = "") -> dict:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_options(parser.add_argument, CANARY_OPTIONS, dest_prefix=prefix)
    return collect(parser.parse_args(list(argv)), CANARY_OPTIONS, prefix)


def test_values_become_settings_with_real_defaults():
    values = parse(
        "--endpoint",
        "http://127.0.0.1:8000/v1/",
        "--canary-dimensions",
        "256,128,256",
        "--endpoint-timeout",
        "2.5",
        "--encoding-format",
        "base64",
        "--api-key-env",
        "EMBED_KEY",
        prefix="evalsuite_",
    )
    s = CanarySettings.from_values(values)
    assert s.endpoint == "http://127.0.0.1:8000/v1"
    assert s.dimensions == (256, 128) and s.timeout == 2.5 and s.encoding_format == "base64"
    assert (s.min_cosine, s.batch_min_cosine, s.max_ndcg_delta, s.concurrency, s.batch_size) == (
        0.99,
        0.999,
        0.005,
        4,
        32,
    )
    assert s.api_key_env == "EMBED_KEY"


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--endpoint", "localhost:8000"], "must be an http(s) URL"),
        (["--canary-min-cosine", "1.5"], "must be > 0 and <= 1"),
        (["--canary-min-cosine", "abc"], "is not a number"),
        (["--canary-max-ndcg-delta", "-0.1"], "must be >= 0"),
        (["--canary-dimensions", "256,x"], "give comma-separated positive integers"),
        (["--canary-dimensions", "0"], "must be >= 1"),
        (["--endpoint-timeout", "0"], "must be > 0"),
        (["--endpoint-concurrency", "0"], "must be >= 1"),
        (["--endpoint-batch-size", "two"], "is not an integer"),
        (["--encoding-format", "bytes"], "invalid choice"),
    ],
)
def test_bad_values_are_rejected_at_parse_time(argv, needle):
    with pytest.raises(argparse.ArgumentError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        parse(*argv)


def test_a_key_passed_as_the_variable_name_is_never_echoed():
    with pytest.raises(argparse.ArgumentError) as info:
        parse("--api-key-env", "sk-live-1234567890")
    assert "sk-live-1234567890" not in str(info.value)
    assert "NAME of the variable" in str(info.value)
    with pytest.raises(argparse.ArgumentError) as info:
        parse("--endpoint", "http://admin:s3cret@host/v1")
    assert "s3cret" not in str(info.value)


def test_settings_need_an_endpoint_and_a_set_key_variable(monkeypatch):
    with pytest.raises(SpecError, match="needs --endpoint URL"):
        CanarySettings.from_values({"served_model": "x"})
    with pytest.raises(SpecError, match="unknown canary setting"):
        CanarySettings.from_values({"endpoint": "http://h/v1", "bogus": 1})
    s = CanarySettings.from_values({"endpoint": "http://h/v1", "api_key_env": "EVALSUITE_TEST_UNSET_KEY"})
    monkeypatch.delenv("EVALSUITE_TEST_UNSET_KEY", raising=False)
    with pytest.raises(SpecError, match=r"names \$EVALSUITE_TEST_UNSET_KEY, but that environment variable is not"):
        s.api_key()
    monkeypatch.setenv("EVALSUITE_TEST_UNSET_KEY", "sk-abc")
    assert repr(s.api_key()) == "Secret('***')" and "sk-abc" not in repr(s) + str(s.to_dict())


def test_importing_options_and_checks_loads_no_heavy_library():
    code = (
        "import sys, evalsuite.canary.embedding.options, evalsuite.checks, evalsuite.canary.cli;"
        "print(sorted(m for m in ('torch','faiss','ranx','transformers','numba','httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
