"""A manifest's fingerprint: the vectors the index was built with, for a few fixed probe texts per role.

``evalsuite run`` writes it into ``manifest.json``; ``evalsuite verify`` sends the same texts
(rendered by the manifest's contract) to a deployment and compares, with no model at hand. The
texts travel with the vectors, so a later evalsuite with other canary texts still verifies an old
manifest. Vectors are little-endian float32 in base64 (8 texts of 384 dimensions: about 16 kB).
Numpy only.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..base.errors import ContractError

if TYPE_CHECKING:
    from ..contract import Contract
    from ..encode.base import Encoder

VERSION = 1
QUERY_IDS = ("q1", "q3", "q8", "q10")
DOCUMENT_IDS = ("d1", "d4", "d11")


@dataclass(frozen=True)
class Fingerprint:
    ids: tuple[str, ...]
    roles: tuple[str, ...]
    texts: tuple[str, ...]
    vectors: np.ndarray  # float32, one row per text, exactly as the index holds them

    def rendered(self, contract: Contract) -> list[str]:
        return [contract.render(r, t) for r, t in zip(self.roles, self.texts, strict=True)]

    def to_dict(self) -> dict[str, object]:
        data = np.ascontiguousarray(self.vectors, dtype="<f4")
        return {
            "version": VERSION,
            "probes": [
                {"id": i, "role": r, "text": t} for i, r, t in zip(self.ids, self.roles, self.texts, strict=True)
            ],
            "dim": int(data.shape[1]),
            "vectors": base64.b64encode(data.tobytes()).decode("ascii"),
        }

    @classmethod
    def from_dict(cls, data: object, source: str) -> Fingerprint:
        """ContractError naming ``source`` and the field for anything malformed."""

        def bad(what: str) -> ContractError:
            return ContractError(f"{source}: fingerprint {what}; re-run `evalsuite run` to write a new manifest")

        if not isinstance(data, Mapping) or data.get("version") != VERSION:
            raise bad(f"is not version {VERSION}")
        probes, dim = data.get("probes"), data.get("dim")
        if not isinstance(probes, list) or not probes or not isinstance(dim, int) or dim < 1:
            raise bad("has no probes or no dimension")
        if not all(isinstance(p, Mapping) and {"id", "role", "text"} <= set(p) for p in probes):
            raise bad("probes need an id, a role and a text each")
        try:
            raw = base64.b64decode(str(data.get("vectors", "")), validate=True)
        except binascii.Error as exc:
            raise bad(f"vectors are not base64 ({exc})") from None
        if len(raw) != 4 * dim * len(probes):
            raise bad(f"vectors hold {len(raw)} bytes, expected {4 * dim * len(probes)}")
        vectors = np.frombuffer(raw, dtype="<f4").reshape(len(probes), dim).astype(np.float32)
        return cls(
            tuple(str(p["id"]) for p in probes),
            tuple(str(p["role"]) for p in probes),
            tuple(str(p["text"]) for p in probes),
            vectors,
        )


def probe_texts(max_length: int, tokens: Callable[[str], int] | None = None) -> list[tuple[str, str, str]]:
    """(id, role, text) of the fixed probes: a few canary queries and documents, and the document of
    about 80% of the max length (a server truncating shorter changes it; ``tokens`` counts a document's model
    input, so it fits a server's limit with the special tokens the tokenizer adds)."""
    from . import probes as texts

    queries, documents = dict(texts.QUERIES), dict(texts.DOCUMENTS)
    long_id, long_text = texts.near_limit_document(max_length, tokens)
    return [
        *((i, "query", queries[i]) for i in QUERY_IDS),
        *((i, "document", documents[i]) for i in DOCUMENT_IDS),
        (long_id, "document", long_text),
    ]


def fingerprint(encoder: Encoder, contract: Contract, tokens: Callable[[str], int] | None = None) -> Fingerprint:
    """The probes' vectors as ``encoder`` makes them under ``contract`` (the index's own vectors)."""
    from ..retrieval.vectors import finalize

    probes = probe_texts(contract.max_length, tokens)
    rows = np.zeros((len(probes), contract.dim), dtype=np.float32)
    for role in ("query", "document"):
        idx = [n for n, (_, r, _) in enumerate(probes) if r == role]
        pooled = encoder.encode(
            contract.render_all(role, [probes[n][2] for n in idx]), poolings=[contract.pooling], role=role
        )[contract.pooling]
        rows[idx] = finalize(pooled, contract.dim, contract.normalize)
    ids, roles, texts_ = zip(*probes, strict=True)
    return Fingerprint(tuple(ids), tuple(roles), tuple(texts_), rows)
