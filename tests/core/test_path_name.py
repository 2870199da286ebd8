"""The one rule every default report directory is named by (`evalsuite canary`, `audit`, `load`, `run`)."""

from __future__ import annotations

import pytest

from evalsuite.base.io import path_name, url_host


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8000", "127.0.0.1-8000"),
        ("my model/v2 (final)", "my-model-v2-final"),
        ("--x--", "x"),
        ("::", "fallback"),
        ("", "fallback"),
    ],
)
def test_path_name_keeps_letters_digits_dot_underscore_dash(text: str, expected: str) -> None:
    assert path_name(text, "fallback") == expected


def test_url_host_is_host_and_port() -> None:
    assert url_host("http://127.0.0.1:8000/v1") == "127.0.0.1:8000"
    assert url_host("https://api.example.com/v1/embeddings") == "api.example.com"
    assert url_host("localhost:9/v1") == "localhost:9"
