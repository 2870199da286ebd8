"""The token-level contract: everything that changes a document's (or query's) token vectors.

Per-token vectors are the last hidden states of the model (or a linear projection of them, e.g.
ColBERT's ``linear`` / BGE-M3's ``colbert_linear``), with the special tokens kept or dropped as the
contract says, optionally L2-normalized per token. A served ``token_embed`` output (vLLM ``/pooling``)
is compared with this, token by token.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ..base.errors import SpecError
from ..contract import DTYPES
from ..retrieval.retrievers.params import SPECIAL_POLICIES

BYTES_PER_VALUE = {"float32": 4, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class LateContract:
    model: str
    model_revision: str
    tokenizer_revision: str
    dim: int
    projection: str | None = None  # a file in the model directory: torch state dict with "weight" [dim, hidden]
    special_tokens: str = "drop"
    normalize: bool = True
    query_prefix: str = ""
    doc_prefix: str = ""
    max_length: int = 128
    dtype: str = "float32"
    storage_dtype: str = "float16"  # how the index would store the vectors (the memory report uses it)

    def __post_init__(self) -> None:
        if self.special_tokens not in SPECIAL_POLICIES:
            raise SpecError(
                f"special_tokens={self.special_tokens!r} is not valid; choose one of {', '.join(SPECIAL_POLICIES)}"
            )
        for name in ("dtype", "storage_dtype"):
            if getattr(self, name) not in DTYPES:
                raise SpecError(
                    f"late-interaction {name}={getattr(self, name)!r} is not valid; choose one of {', '.join(DTYPES)}"
                )
        if not isinstance(self.dim, int) or self.dim < 1:
            raise SpecError(f"late-interaction dim={self.dim!r} must be a positive integer")
        if not isinstance(self.max_length, int) or self.max_length < 2:
            raise SpecError(f"late-interaction max_length={self.max_length!r} must be an integer >= 2")

    def prefix(self, role: str) -> str:
        return self.query_prefix if role == "query" else self.doc_prefix

    def bytes_per_token(self) -> int:
        return self.dim * BYTES_PER_VALUE[self.storage_dtype]

    def replace(self, **changes: Any) -> LateContract:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]
