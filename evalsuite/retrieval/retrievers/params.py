"""A retriever's parameters and the fusion methods, declared once (pure, no heavy imports).

A :class:`Param` is one setting of a retriever: its name in the canonical text (``k1``), the spec key and
``--flag`` that set it (``bm25_k1``, ``--bm25-k1``), its default, how a value is read and written back.
A :class:`Fusion` is one way ranx fuses component runs (:func:`ranx.fuse`): which ranx method, whether it
reads the components' ranks or their scores, and which of ``k``, ``weights`` and ``norm`` it takes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ...base.errors import SpecError

ParamValue = int | float | str | tuple[str, ...] | tuple[float, ...]
ParamKind = Literal["int", "float", "choice", "word", "names", "floats"]


@dataclass(frozen=True)
class Param:
    """One parameter. ``kind``: ``int``/``float`` (``minimum``, ``maximum``), ``choice`` (one of ``choices``),
    ``word`` (a lower-case name checked when the retriever runs), ``names`` (``a+b``: a list of choices),
    ``floats`` (``0.7+0.3``: a list of numbers). ``default`` None: resolved from the others (the weights)."""

    name: str
    setting: str
    kind: ParamKind
    default: ParamValue | None
    explanation: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    @property
    def flag(self) -> str:
        return "--" + self.setting.replace("_", "-")

    def parse(self, raw: object) -> ParamValue:
        """A value as the text, a spec file or a flag gives it (``"1.2"``, ``1.2``, ``"dense,bm25"``, a list)."""
        if self.kind in ("names", "floats"):
            items = raw.replace(",", "+").split("+") if isinstance(raw, str) else raw
            if not isinstance(items, (list, tuple)) or not items:
                raise self.error(raw, "a list")
            if self.kind == "names":
                return tuple(self._choice(str(item).strip().lower(), raw) for item in items)
            return tuple(float(self._number(item, raw)) for item in items)
        if self.kind in ("int", "float"):
            return self._number(raw, raw)
        text = str(raw).strip().lower()
        if self.kind == "choice":
            return self._choice(text, raw)
        if not text or not text.replace("_", "").replace("-", "").isalnum():
            raise self.error(raw, "a name (letters, digits, '_' or '-')")
        return text

    def _choice(self, text: str, raw: object) -> str:
        if text not in self.choices:
            raise self.error(raw, f"one of {', '.join(self.choices)}")
        return text

    def _number(self, item: object, raw: object) -> int | float:
        try:
            if isinstance(item, bool):
                raise ValueError
            value: int | float = int(str(item).strip()) if self.kind == "int" else float(str(item).strip())
        except ValueError:
            raise self.error(raw, "an integer" if self.kind == "int" else "a number") from None
        if not math.isfinite(value):
            raise self.error(raw, "a finite number")
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            bounds = [
                f">= {self.minimum:g}" if self.minimum is not None else "",
                f"<= {self.maximum:g}" if self.maximum is not None else "",
            ]
            raise self.error(raw, "a number " + " and ".join(b for b in bounds if b))
        return value

    def error(self, raw: object, wanted: str) -> SpecError:
        return SpecError(f"{self.setting} ({self.flag}) {raw!r} is not valid: it must be {wanted}; {self.explanation}")

    def render(self, value: ParamValue) -> str:
        if isinstance(value, tuple):
            return "+".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
        if isinstance(value, float):
            return f"{value:g}"
        return str(value)


@dataclass(frozen=True)
class Fusion:
    """One fusion method: ``ranx`` is its name for :func:`ranx.fuse`; ``reads`` whether ranx is given each
    component's ranks (``n - rank``, so ranx's order is exactly the written tie order) or its raw scores;
    ``takes`` which of the hybrid's ``k``, ``weights`` and ``norm`` apply to it."""

    name: str
    ranx: str
    reads: Literal["ranks", "scores"]
    takes: tuple[str, ...]
    explanation: str


FUSIONS: tuple[Fusion, ...] = (
    Fusion("rrf", "rrf", "ranks", ("k",), "reciprocal rank fusion: the sum over components of 1 / (k + rank)"),
    Fusion("wsum", "wsum", "scores", ("weights", "norm"), "weighted sum of the normalised scores"),
    Fusion("sum", "sum", "scores", ("norm",), "CombSUM: the sum of the normalised scores"),
    Fusion("mnz", "mnz", "scores", ("norm",), "CombMNZ: CombSUM times the number of components retrieving it"),
    Fusion("max", "max", "scores", ("norm",), "CombMAX: the largest normalised score"),
)
FUSION_NAMES: tuple[str, ...] = tuple(f.name for f in FUSIONS)
# ranx's score normalisations (zmuv: zero mean, unit variance, i.e. the z-score)
NORMS: tuple[str, ...] = ("min-max", "max", "sum", "zmuv", "rank")
# bm25s's scoring variants and stop-word lists (bm25s.tokenize's own names)
BM25_METHODS: tuple[str, ...] = ("lucene", "robertson", "atire", "bm25l", "bm25+")
# which special tokens' vectors a token-level contract keeps (the multivector retriever's, evalsuite late's): drop
# every special token, keep all, or keep only the first ([CLS])
SPECIAL_POLICIES: tuple[str, ...] = ("drop", "keep", "cls")
STOPWORDS: tuple[str, ...] = ("en", "none", "en_plus", "de", "nl", "fr", "es", "pt", "it", "ru", "sv", "no")


def fusion(name: str) -> Fusion:
    for f in FUSIONS:
        if f.name == name:
            return f
    raise SpecError(f"fusion {name!r} is not one of {', '.join(FUSION_NAMES)}")
