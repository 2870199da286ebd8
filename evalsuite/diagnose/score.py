"""Pure numpy: derive an alternative's vectors from pooled ones, and judge which alternative explains
the served vectors best (no model, no HTTP; :mod:`evalsuite.verify` uses it without the model too).

How well an alternative fits is the largest relative difference ``|served - candidate| / |candidate|``
over the texts: it sees direction and norm at once (a vector of the right direction but another norm
does not fit), and is 0 for the same encoding. An alternative *explains* the served vectors when that
difference is at most :data:`EXPLAIN_TOL` and clearly smaller than the contract's own. When none does,
:func:`name_precision` may still name reduced precision from how the vectors depart (:mod:`.precision`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .hypotheses import PRECISION, STAGES, Alternative, Factor
from .precision import Spread, spread

EXPLAIN_TOL = 0.02  # max relative difference of an explaining alternative (cosine >= ~0.9998 at equal norms)
MARGIN = 2.0  # the best must fit this many times better than the contract, and ties within it prefer fewer causes
SHOWN = 5  # alternatives listed in reports


def round_to(vectors: np.ndarray, dtype: str | None) -> np.ndarray:
    """``vectors`` rounded to ``dtype`` (float16 or bfloat16, round to nearest even) and back to float32."""
    v = np.asarray(vectors, dtype=np.float32)
    if dtype is None:
        return v
    if dtype == "float16":
        out: np.ndarray = v.astype(np.float16).astype(np.float32)
        return out
    if dtype == "bfloat16":
        bits = v.view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
        return rounded.astype(np.uint32).view(np.float32)
    raise ValueError(f"unknown rounding {dtype!r}; choose float16 or bfloat16")


def _unit(v: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    out: np.ndarray = v / np.where(norms > 0, norms, 1.0)
    return out


def derive(pooled: np.ndarray, alt: Alternative) -> np.ndarray:
    """The vectors ``alt`` makes of full-size ``pooled`` vectors: normalize, cut, re-normalize, round."""
    v = np.asarray(pooled, dtype=np.float64)
    if alt.normalize:
        v = _unit(v)
    v = v[:, : alt.dim]
    if alt.renormalize:
        v = _unit(v)
    return round_to(v.astype(np.float32), alt.rounding)


def numeric_variants(
    base: Alternative, width: int, hidden: int, roundings: Sequence[str | None] = (None,)
) -> Iterator[Alternative]:
    """Every normalization, Matryoshka cut to ``width`` (re-normalized or not) and output rounding around
    ``base``: what numpy derives from one set of pooled (or, in ``verify``, final) vectors."""
    for normalize in (True, False):
        for renormalize in (True, False) if width < hidden else (normalize,):
            for rounding in roundings:
                yield base.replace(normalize=normalize, renormalize=renormalize, dim=width, rounding=rounding)


@dataclass(frozen=True)
class Fit:
    """How one alternative's vectors compare with the served ones."""

    alternative: Alternative
    label: str
    min_cosine: float
    max_difference: float  # largest relative L2 difference over the texts
    worst: str

    def to_dict(self, rank: int) -> dict[str, object]:
        return {
            "rank": rank,
            "hypothesis": self.label,
            "min_cosine": round(self.min_cosine, 6),
            "max_relative_difference": float(f"{self.max_difference:.3g}"),
            "worst": self.worst,
        }


def fit(served: np.ndarray, candidate: np.ndarray, ids: Sequence[str], alt: Alternative, label: str) -> Fit:
    s, c = np.asarray(served, np.float64), np.asarray(candidate, np.float64)
    cn, sn = np.linalg.norm(c, axis=1), np.linalg.norm(s, axis=1)
    diff = np.linalg.norm(s - c, axis=1) / np.where(cn > 0, cn, 1.0)
    denom = cn * sn
    cos = np.sum(s * c, axis=1) / np.where(denom > 0, denom, 1.0)
    worst = int(diff.argmax())
    return Fit(alt, label, float(cos.min()), float(diff.max()), ids[worst])


@dataclass(frozen=True)
class Cause:
    """One departure of the best alternative from the contract, with its triage stage and remedy."""

    factor: str
    stage: str
    value: object
    text: str
    remedy: str

    def to_dict(self) -> dict[str, object]:
        return {
            "factor": self.factor,
            "stage": self.stage,
            "value": self.value,
            "cause": self.text,
            "remedy": self.remedy,
        }


@dataclass(frozen=True)
class Diagnosis:
    """The alternatives ranked by fit; ``causes`` are the best one's departures when it explains the
    served vectors (empty otherwise: nothing explains them, or the contract itself does)."""

    what: str  # which served vectors were diagnosed ("27 canary texts", "dimensions=128")
    texts: int
    ranked: tuple[Fit, ...]
    contract: Fit
    causes: tuple[Cause, ...]
    engine: str | None
    not_tested: tuple[str, ...] = ()
    precision: Spread | None = None  # set when the last cause is reduced precision (:func:`name_precision`)

    @property
    def best(self) -> Fit:
        return self.ranked[0]

    @property
    def explained(self) -> bool:
        return bool(self.causes)

    @property
    def agrees(self) -> bool:
        """The served vectors are the contract's (the fault is elsewhere)."""
        return not self.causes and self.contract.max_difference <= EXPLAIN_TOL

    def sentence(self) -> str:
        """One line for the terminal and the pytest message."""
        c = self.contract
        if self.precision is not None:
            b = self.best
            closest = (
                f"the contract's own (max relative difference {c.max_difference:.2g})"
                if b.label == c.label
                else f"{b.label} of the reference (max relative difference {b.max_difference:.2g}; the contract's: "
                f"{c.max_difference:.2g})"
            )
            return (
                f"cause: {' and '.join(x.text for x in self.causes)}; evidence: no alternative explains the served "
                f"vectors, the closest is {closest} and {self.precision.evidence()}; fix: "
                f"{'; '.join(dict.fromkeys(x.remedy for x in self.causes))}"
            )
        if self.explained:
            b = self.best
            ev = (
                f"min cosine {b.min_cosine:.5f} over {self.texts} texts, max relative difference {b.max_difference:.2g}"
            )
            return (
                f"cause: {' and '.join(x.text for x in self.causes)}; evidence: served vectors equal {b.label} of "
                f"the reference ({ev}; the contract's: min cosine {c.min_cosine:.4f}, max relative difference "
                f"{c.max_difference:.2g}); fix: {'; '.join(dict.fromkeys(x.remedy for x in self.causes))}"
            )
        if self.agrees:
            return (
                f"cause: not in the vectors ({self.what}: the served vectors match the contract, max relative "
                f"difference {c.max_difference:.2g})"
            )
        closest = "; ".join(f"{f.label}: min cosine {f.min_cosine:.4f}" for f in self.ranked[:3])
        return f"cause: no hypothesis explains the served vectors ({self.what}); closest: {closest}"

    def to_dict(self) -> dict[str, object]:
        return {
            "what": self.what,
            "explained": self.explained,
            "sentence": self.sentence(),
            "engine": self.engine,
            "causes": [c.to_dict() for c in self.causes],
            "contract": self.contract.to_dict(0),
            "ranked": [f.to_dict(i + 1) for i, f in enumerate(self.ranked[:SHOWN])],
            "not_tested": list(self.not_tested),
            **({"precision": self.precision.to_dict()} if self.precision is not None else {}),
        }


def diagnose(
    served: np.ndarray,
    candidates: Mapping[Alternative, np.ndarray],
    ids: Sequence[str],
    *,
    base: Alternative,
    hidden: int,
    contract: object,
    what: str,
    engine: str | None = None,
    not_tested: Iterable[str] = (),
) -> Diagnosis:
    """Rank every candidate (of the served vectors' width) by fit; name the best one's departures from
    ``base`` as causes when it explains the served vectors and beats the contract by :data:`MARGIN`.
    Among alternatives fitting within :data:`MARGIN` of the best, the one with the fewest departures wins."""
    width = served.shape[1]
    fits = [
        fit(served, vecs, ids, alt, alt.label(base, hidden))
        for alt, vecs in candidates.items()
        if vecs.shape[1] == width
    ]
    if not fits:
        raise ValueError(f"no candidate has the served vectors' {width} dimensions")
    fits.sort(key=lambda f: f.max_difference)
    floor = fits[0].max_difference
    close = [f for f in fits if f.max_difference <= max(floor * MARGIN, floor + 1e-6)]
    best = min(close, key=lambda f: (len(f.alternative.departures(base, hidden)), f.max_difference))
    ranked = (best, *(f for f in fits if f is not best))
    own = next((f for f in fits if f.alternative == base), None)
    if own is None:  # the contract's width differs from the served one: its fit is the nearest cut of it
        own = Fit(base, "the contract", float("nan"), float("inf"), ids[0])
    causes: tuple[Cause, ...] = ()
    if (
        best.alternative != base
        and best.max_difference <= EXPLAIN_TOL
        and best.max_difference * MARGIN <= own.max_difference
    ):
        causes = tuple(_cause(f, v, contract, engine) for f, v in best.alternative.departures(base, hidden))
    return Diagnosis(what, len(ids), ranked, own, causes, engine, tuple(not_tested))


def name_precision(
    found: Diagnosis,
    served: np.ndarray,
    candidates: Mapping[Alternative, np.ndarray],
    ids: Sequence[str],
    *,
    base: Alternative,
    hidden: int,
    contract: object,
) -> Diagnosis:
    """``found`` (a diagnosis over every alternative), with reduced precision named when nothing explains the
    served vectors but they depart evenly, at high cosine, from the best alternative's (:mod:`.precision`): the
    best one's departures from ``base`` (none when it is the contract) then precision are the causes. The best
    must be the contract or fit :data:`MARGIN` times better than it, as :func:`diagnose` asks of a named one."""
    best = found.best
    if found.explained or found.agrees or best.alternative not in candidates:
        return found
    if best.alternative != base and best.max_difference * MARGIN > found.contract.max_difference:
        return found
    evidence = spread(served, candidates[best.alternative], ids)
    if not evidence.reduced_precision(EXPLAIN_TOL):
        return found
    causes = [_cause(f, v, contract, found.engine) for f, v in best.alternative.departures(base, hidden)]
    causes.append(_cause(PRECISION, round(evidence.min_cosine, 4), contract, found.engine))
    return replace(found, causes=tuple(causes), precision=evidence)


def _cause(factor: Factor, value: Any, contract: Any, engine: str | None) -> Cause:
    return Cause(
        factor.field, factor.stage, value, factor.cause(value, contract), factor.remedy_for(engine, value, contract)
    )


def stage_of(diagnosis: Diagnosis | None) -> str | None:
    """The earliest triage stage among the diagnosis's causes (None when it names none)."""
    if diagnosis is None or not diagnosis.causes:
        return None
    order = [name for name, _ in STAGES]
    return min((c.stage for c in diagnosis.causes), key=order.index)
