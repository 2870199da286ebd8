"""Slice selectors: which queries a slice holds, written the way gates and reports name it.

::

    topic=finance          a query metadata field (queries.jsonl) has this value
    doc.domain=legal       one of the query's relevant documents has this metadata value
    qlen<=32               the rendered query has at most 32 tokens (also <, >, >=, =N)
    qlen=33..128           ... between 33 and 128 tokens, both included
    doclen>256             the query's longest relevant document has more than 256 tokens
    doclen=truncated       ... is longer than the contract's max_length (cut when encoded)

Lengths are model tokens of the text as the contract renders it (prefix included, special tokens
included: what the model sees before truncation). Pure: parsing needs no dataset; whether a field
or value exists is checked against one (:meth:`SliceIndex.check`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from ..base.errors import SpecError

LENGTHS = ("qlen", "doclen")
TRUNCATED = "truncated"
DOC_FIELD_PREFIX = "doc."
# the length buckets every run reports, each written as the selector that picks it
BUCKET_EDGES = (32, 128, 256, 512)
Op = Literal["<=", "<", ">=", ">", "=", "range", "truncated"]

_LENGTH = re.compile(r"^(?P<dim>qlen|doclen)\s*(?P<op><=|>=|<|>|=)\s*(?P<value>\S+)$")
_FIELD = re.compile(r"^(?P<field>[^=<>\s\[\]]+)\s*=\s*(?P<value>[^\[\]]+?)$")
_RANGE = re.compile(r"^(?P<lo>\d+)\.\.(?P<hi>\d+)$")
FORMS = ("FIELD=VALUE", "doc.FIELD=VALUE", "qlen<=N", "doclen>N", "qlen=A..B", "doclen=truncated")


@dataclass(frozen=True)
class Selector:
    """One parsed selector; ``text`` is its canonical spelling (the slice's name everywhere)."""

    dimension: str  # "qlen", "doclen", a query field, or "doc.<field>"
    op: Op
    value: str  # the field value; for a length the number(s) as written canonically
    low: int = 0  # lengths: inclusive bounds
    high: int | None = None

    @property
    def text(self) -> str:
        if self.dimension in LENGTHS:
            if self.op == "truncated":
                return f"{self.dimension}={TRUNCATED}"
            if self.op == "range":
                return f"{self.dimension}={self.low}..{self.high}"
            return f"{self.dimension}{self.op}{self.value}"
        return f"{self.dimension}={self.value}"

    @property
    def is_length(self) -> bool:
        return self.dimension in LENGTHS

    @property
    def is_doc_field(self) -> bool:
        return self.dimension.startswith(DOC_FIELD_PREFIX)

    def holds(self, length: int, max_length: int) -> bool:
        """For a length selector: does a text of ``length`` tokens belong, under ``max_length``?"""
        if self.op == "truncated":
            return length > max_length
        return self.low <= length and (self.high is None or length <= self.high)


def parse_selector(text: str, where: str = "slice") -> Selector:
    """Parse ``topic=finance``, ``qlen<=32``, ``doclen=truncated`` ...; SpecError lists the forms."""
    s = text.strip()
    m = _LENGTH.match(s)
    if m:
        return _length(m.group("dim"), m.group("op"), m.group("value"), where, text)
    m = _FIELD.match(s)
    if m and m.group("field") not in LENGTHS:
        field, value = m.group("field").strip(), m.group("value").strip()
        if field == DOC_FIELD_PREFIX.rstrip(".") or field.endswith("."):
            raise SpecError(f"{where} [{text}]: name the document field, e.g. doc.domain=legal")
        return Selector(field, "=", value)
    raise SpecError(f"{where} [{text}] is not a slice; use one of {', '.join(FORMS)}")


def _length(dim: str, op: str, raw: str, where: str, text: str) -> Selector:
    if op == "=" and raw == TRUNCATED:
        return Selector(dim, "truncated", TRUNCATED)
    r = _RANGE.match(raw)
    if op == "=" and r:
        lo, hi = int(r.group("lo")), int(r.group("hi"))
        if lo > hi:
            raise SpecError(f"{where} [{text}]: the range {lo}..{hi} is empty; write LOW..HIGH")
        return Selector(dim, "range", raw, lo, hi)
    if not raw.isdigit():
        raise SpecError(
            f"{where} [{text}]: {raw!r} is not a token count; use {dim}<=N, {dim}=A..B or {dim}={TRUNCATED}"
        )
    n = int(raw)
    bounds = {"<=": (0, n), "<": (0, n - 1), ">=": (n, None), ">": (n + 1, None), "=": (n, n)}[op]
    if bounds[1] is not None and bounds[1] < bounds[0]:
        raise SpecError(f"{where} [{text}]: no text has fewer than 0 tokens")
    return Selector(dim, op, str(n), *bounds)  # type: ignore[arg-type]


def length_buckets(dimension: str) -> tuple[Selector, ...]:
    """``≤32, 33..128, 129..256, 257..512, >512`` and ``truncated``, as selectors of ``dimension``."""
    edges = BUCKET_EDGES
    out = [parse_selector(f"{dimension}<={edges[0]}")]
    out += [parse_selector(f"{dimension}={lo + 1}..{hi}") for lo, hi in pairwise(edges)]
    out += [parse_selector(f"{dimension}>{edges[-1]}"), parse_selector(f"{dimension}={TRUNCATED}")]
    return tuple(out)
