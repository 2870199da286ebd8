"""Counters of a model's work (texts or pairs, tokens, padding, truncations, batches, seconds): one shape for the
reference encoder's (`encode/base.py` ``EncodeStats``) and the reranker's (`rerank/local.py` ``RerankStats``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Self


@dataclass
class Counters:
    """Numeric fields that add up; reported in field order, seconds to 0.1 ms."""

    def copy(self) -> Self:
        return dataclasses.replace(self)

    def minus(self, other: Self) -> Self:
        return type(self)(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in dataclasses.fields(self)})

    def add(self, other: Self) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_dict(self) -> dict[str, float | int]:
        return {
            f.name: round(v, 4) if isinstance(v := getattr(self, f.name), float) else v
            for f in dataclasses.fields(self)
        }
