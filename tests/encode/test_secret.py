"""The API key: checked before use, never shown, and redacted in every form a server may echo it."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.encode.response import ResponseError, describe, load_json
from evalsuite.encode.secret import Secret, cut, key_problem, redact

KEY = "sk-unit/key+0123456789abcdefXYZ"


def test_a_valid_key_is_stripped_and_never_shown():
    s = Secret.validated(f"  {KEY}\n", "MY_KEY")
    assert s.reveal() == KEY and s.source == "MY_KEY"
    assert KEY not in f"{s} {s!r}"


@pytest.mark.parametrize(
    "value, kind",
    [
        ("sk-a\nb", "a line break at character 5 of 6"),
        ("sk a", "whitespace at character 3 of 4"),
        ("sk-\u00e9t\u00e9", "a non-ASCII character at character 4"),
        ("sk-\x7f", "a control character"),
        ("   ", "is empty"),
    ],
)
def test_a_key_that_cannot_go_in_a_header_names_the_variable_not_the_value(value, kind):
    with pytest.raises(SpecError) as info:
        Secret.validated(value, "MY_KEY")
    msg = str(info.value)
    assert "$MY_KEY" in msg and kind in msg
    assert value.strip() not in msg or not value.strip()
    assert key_problem(KEY) is None


def _b64_inside(prefix: str, key: str, suffix: str = "", urlsafe: bool = False) -> str:
    enc = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return enc(f"{prefix}{key}{suffix}".encode()).decode()


@pytest.mark.parametrize(
    "form",
    [
        KEY,
        json.dumps(KEY)[1:-1].replace("/", "\\/"),  # JSON with an escaped slash
        "".join(f"\\u{ord(c):04x}" for c in KEY),  # every character \u-escaped
        "".join(f"\\u{ord(c):04X}" for c in KEY),  # upper-case hex
        KEY[:5] + "\\u002F" + KEY[6:] if KEY[5] == "/" else KEY,  # one character escaped
        json.dumps(json.dumps(KEY))[1:-1],  # JSON inside JSON
        urllib.parse.quote(KEY, safe=""),
        re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote(KEY, safe="")),
        _b64_inside("", KEY),
        _b64_inside("Bearer ", KEY),
        _b64_inside("Authorization: Bearer ", KEY, "\r\n"),
        _b64_inside("user:", KEY),
        _b64_inside("x", KEY, "yz", urlsafe=True),
    ],
)
def test_every_form_of_a_registered_key_is_redacted(form):
    Secret(KEY)
    out = redact(f"server said <{form}> twice <{form}>")
    assert out.count("***") >= 2
    assert form not in out and KEY not in out
    # what is left of a base64 form decodes to no more than a few bytes of the key
    for piece in out.replace("<", " ").replace(">", " ").split():
        assert KEY[4:12] not in piece


def test_redaction_leaves_other_text_alone():
    Secret(KEY)
    text = "sk-unit/ke is a prefix only; %2F and \\u002f alone; base64 c2stdW5p"
    assert redact(text) == text


def test_cut_bounds_server_text_and_never_leaves_half_a_key():
    Secret(KEY)
    assert cut("a" * 50) == "a" * 50
    assert cut("a" * 250) == "a" * 200 + "…(50 more)"
    assert cut("x\n\ny") == "x y"
    echoed = "m" * 190 + KEY  # a cut at 200 would keep the key's first 10 characters
    assert KEY[:8] not in cut(echoed) and "***" in cut(echoed)


def test_errors_are_redacted_when_built():
    Secret(KEY)
    exc = ResponseError(f"model {KEY!r} is wrong", item=f"item {KEY}")
    for text in (str(exc), repr(exc), repr(exc.args)):
        assert KEY not in text


def test_describe_is_short_for_any_value():
    deep: list = []
    node = deep
    for _ in range(5000):
        node.append([])
        node = node[0]
    assert describe(deep) == "[[[...]]]"
    assert describe(10**500) == "an integer of 501 digits"
    assert describe(12) == "12"
    assert len(describe("x" * 10**6)) < 250
    assert len(describe({str(i): i for i in range(10**4)})) < 250


def test_load_json_names_what_is_wrong():
    with pytest.raises(ResponseError, match="nested too deeply"):
        load_json(b"[" * 200_000, "GET u")
    with pytest.raises(ResponseError, match=r"HTTP 200 \(text/html\) is not JSON .*'<p>hi</p>'"):
        load_json(b"<p>hi</p>", "GET u", content_type="text/html")
    assert load_json(b'{"a": [1, 2.5, NaN]}', "GET u")["a"][:2] == [1, 2.5]


def test_cut_escapes_control_characters():
    assert cut("red \x1b[31m alert\x07 \u200b") == "red \\x1b[31m alert\\x07 \\u200b"
