"""Body decoding of the endpoint client, piece by piece: every coding, any chunking, bombs and junk."""

from __future__ import annotations

import base64
import gzip
import json
import zlib

import numpy as np
import pytest

from evalsuite.encode.body import ResponseDecodingError, _Decoder, _decoders, body_cap
from evalsuite.encode.http import Deadline

BODY = b'{"x": ' + b"1," * 50_000 + b"1}"


def decode(coding: str, packed: bytes, step: int, room: int = 1 << 30) -> bytes:
    d, out = _Decoder(coding), b""
    for i in range(0, len(packed), step):
        for part in d.feed(packed[i : i + step], room):
            assert len(part) <= room + 1
            out += part
    return out + d.finish()


@pytest.mark.parametrize("coding, wbits", [("gzip", 31), ("x-gzip", 31), ("deflate", 15), ("deflate", -15)])
@pytest.mark.parametrize("step", [1, 2, 7, 4096, 10**7])
def test_every_coding_decodes_in_any_chunking(coding, wbits, step):
    comp = zlib.compressobj(6, zlib.DEFLATED, wbits)
    assert decode(coding, comp.compress(BODY) + comp.flush(), step) == BODY


def test_gzip_members_are_concatenated_and_each_output_is_bounded():
    assert decode("gzip", gzip.compress(b"ab") + gzip.compress(b"cd"), 3) == b"abcd"
    assert decode("gzip", gzip.compress(b"\0" * 10**6), 10**6, room=1000) == b"\0" * 10**6


@pytest.mark.parametrize(
    "coding, packed, needle",
    [
        ("gzip", b'{"not": "gzip"}', "incorrect header check"),
        ("deflate", b'{"not": "deflate"}', "invalid|ends early"),
        ("gzip", gzip.compress(BODY, mtime=0)[:-30], "ends early"),
        ("gzip", gzip.compress(b"ab", mtime=0) + b"junk", "header"),
        ("deflate", zlib.compress(b"ab") + b"junk", "after the end"),
    ],
)
def test_junk_is_a_zlib_error(coding, packed, needle):
    with pytest.raises(zlib.error, match=needle):
        decode(coding, packed, 5)


def test_only_the_codings_asked_for_are_accepted():
    assert [d.coding for d in _decoders("gzip, identity, deflate")] == ["deflate", "gzip"]
    assert _decoders("") == [] and _decoders("identity") == []
    for coding in ("br", "zstd", "compress", "x" * 500):
        with pytest.raises(ResponseDecodingError, match="is not supported"):
            _decoders(f"gzip, {coding}")


@pytest.mark.parametrize(
    "n, dim, fmt",
    [(1, 8, "float"), (32, 1024, "float"), (64, 4096, "float"), (32, 1024, "base64"), (128, 3072, "base64")],
)
def test_the_cap_holds_a_sound_answer_with_headroom(n, dim, fmt):
    rng = np.random.default_rng(1)
    vecs = rng.standard_normal((n, dim)) * 1e-3  # long reprs: -0.0012345678901234567
    emb = [base64.b64encode(v.astype("<f4").tobytes()).decode() if fmt == "base64" else v.tolist() for v in vecs]
    body = json.dumps(
        {
            "object": "list",
            "model": "m" * 200,
            "usage": {"prompt_tokens": 10**6},
            "data": [{"object": "embedding", "index": i, "embedding": e} for i, e in enumerate(emb)],
        },
        indent=2,
    )
    cap = body_cap(n, dim, fmt)
    assert 1.5 * len(body) < cap < 8 * len(body) + (4 << 20)


def test_a_deadline_counts_down():
    d = Deadline.after(10.0, "the canary's overall deadline")
    assert 9.0 < d.remaining() <= 10.0 and not d.expired()
    assert d.describe() == "the canary's overall deadline (10s)"
    assert Deadline.after(0.0).expired()
