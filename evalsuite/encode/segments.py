"""The embedding cache's segment file: many rows of (text hash, pooled vector, token count, truncated).

``MAGIC | u32 header length | JSON header | n x 16 hash bytes | n x dim float32 | n x int32 token counts |
n x uint8 truncated flags | sha256 of everything before``. Version 1 segments (no counts) are still read,
their token counts as unknown (-1). ``ShardKey`` is passed in, never imported (no upward import).
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"EVSCACHE2\n"
MAGIC_V1 = b"EVSCACHE1\n"  # read (token counts unknown), never written
HASH_BYTES = 16
SUM_BYTES = 32


@dataclass(frozen=True)
class Segment:
    path: Path
    hashes: np.ndarray  # (n, 16) uint8
    vectors: np.ndarray  # (n, dim) float32
    tokens: np.ndarray  # (n,) int32, the text's token count after truncation; -1 when unknown
    truncated: np.ndarray  # (n,) bool


def encode_segment(
    key: Any,
    hashes: Sequence[bytes],
    vectors: np.ndarray,
    tokens: np.ndarray | None = None,
    truncated: np.ndarray | None = None,
) -> bytes:
    n = len(hashes)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    tok = np.full(n, -1, dtype="<i4") if tokens is None else np.ascontiguousarray(tokens, dtype="<i4")
    trunc = np.zeros(n, dtype=np.uint8) if truncated is None else np.ascontiguousarray(truncated, dtype=np.uint8)
    header = json.dumps({"n": n, "dim": int(vectors.shape[1]), "key": asdict(key)}, sort_keys=True).encode()
    body = b"".join(
        [
            MAGIC,
            struct.pack("<I", len(header)),
            header,
            b"".join(hashes),
            vectors.tobytes(),
            tok.tobytes(),
            trunc.tobytes(),
        ]
    )
    return body + hashlib.sha256(body).digest()


def decode_segment(path: Path, data: bytes, key: Any) -> Segment:
    """Parse and verify one segment; ``ValueError`` says what is wrong with it."""
    version = 2 if data.startswith(MAGIC) else 1 if data.startswith(MAGIC_V1) else 0
    if len(data) < len(MAGIC) + 4 + SUM_BYTES or not version:
        raise ValueError("not a cache segment or truncated before its header")
    body, checksum = data[:-SUM_BYTES], data[-SUM_BYTES:]
    if hashlib.sha256(body).digest() != checksum:
        raise ValueError("checksum mismatch (corrupted or truncated)")
    (hlen,) = struct.unpack_from("<I", data, len(MAGIC))
    start = len(MAGIC) + 4
    header = json.loads(data[start : start + hlen])
    n, dim = int(header["n"]), int(header["dim"])
    expected, found = asdict(key), header.get("key")
    if isinstance(found, dict) and expected.get("head") == "":  # segments written before ShardKey.head
        found.setdefault("head", "")
    if found != expected or dim != key.dim:
        raise ValueError("segment belongs to another cache key")
    off = start + hlen
    if len(body) != off + n * HASH_BYTES + n * dim * 4 + (n * 5 if version == 2 else 0):
        raise ValueError("size does not match its header")
    hashes = np.frombuffer(data, dtype=np.uint8, count=n * HASH_BYTES, offset=off).reshape(n, HASH_BYTES)
    off += n * HASH_BYTES
    vectors = np.frombuffer(data, dtype=np.float32, count=n * dim, offset=off).reshape(n, dim)
    off += n * dim * 4
    if version == 1:
        return Segment(path, hashes, vectors, np.full(n, -1, dtype=np.int32), np.zeros(n, dtype=bool))
    tokens = np.frombuffer(data, dtype="<i4", count=n, offset=off)
    truncated = np.frombuffer(data, dtype=np.uint8, count=n, offset=off + n * 4).astype(bool)
    return Segment(path, hashes, vectors, tokens, truncated)
