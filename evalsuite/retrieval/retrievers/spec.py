"""Retrieval specs: which retriever a contract's ranking comes from, as one canonical text (pure).

Grammar: ``KIND[:NAME=VALUE,...]``, e.g. ``dense``, ``bm25``, ``bm25:k1=1.2,b=0.6``,
``hybrid:fuse=dense+bm25,fusion=wsum,weights=0.7+0.3,norm=zmuv``. The canonical text fills in every default
(``hybrid`` is ``hybrid:fuse=dense+bm25,fusion=rrf,k=60,depth=100,k1=1.5,b=0.75,method=lucene,stopwords=en,
stemmer=none``), so two contracts naming the same retrieval compare equal; a hybrid's text also holds its
components' parameters. A parameter the retriever (or its fusion) does not take is an error naming the ones
it does. Flags and spec keys (``--fusion-k``, ``bm25_k1``) set the same parameters (:func:`resolve`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...base.errors import SpecError
from .kinds import FUSABLE_NAMES, RETRIEVERS, RetrieverKind, all_params, retrieval_param, retriever
from .params import Param, ParamValue, fusion
from .value import RetrievalSpec

DENSE = "dense"
EXAMPLE = "dense, bm25, bm25:k1=1.2,b=0.6, hybrid, hybrid:fuse=dense+bm25,fusion=wsum,weights=0.7+0.3"


def _kind_params(kind: RetrieverKind) -> tuple[Param, ...]:
    """A kind's own parameters, then those of every retriever it may fuse (a hybrid's components)."""
    if kind.fusable:
        return kind.params
    out = list(kind.params)
    for name in FUSABLE_NAMES:
        out += [p for p in retriever(name).params if p not in out]
    return tuple(out)


def _param(kind: str, name: str) -> Param:
    for p in _kind_params(retriever(kind)):
        if p.name == name:
            return p
    raise KeyError(name)


def _error(text: str, message: str) -> SpecError:
    return SpecError(f"retrieval {text!r}: {message}; e.g. {EXAMPLE}")


def parse_retrieval(text: str) -> RetrievalSpec:
    """Parse a retrieval text (kinds and names case-insensitive). Raises :class:`SpecError` naming the valid
    retrievers and parameters."""
    if not isinstance(text, str) or not text.strip():
        raise _error(str(text), "a retrieval is a non-empty text")
    body, colon, rest = text.strip().partition(":")
    try:
        kind = retriever(body)
    except SpecError as exc:
        raise _error(text, str(exc)) from None
    given: dict[str, object] = {}
    if colon:
        if not rest.strip():
            raise _error(text, "nothing after ':'")
        by_name = {p.name.lower(): p for p in _kind_params(kind)}
        for item in rest.split(","):
            name, eq, raw = item.partition("=")
            p = by_name.get(name.strip().lower())
            if not eq or p is None:
                known = ", ".join(by_name) or "none"
                raise _error(text, f"{kind.name} has no parameter {name.strip()!r} (parameters: {known})")
            given[p.setting] = raw
    try:
        return complete(kind, given)
    except SpecError as exc:
        raise _error(text, str(exc)) from None


def complete(kind: RetrieverKind, given: Mapping[str, object]) -> RetrievalSpec:
    """``kind`` with the settings ``given`` (by spec key) parsed and every other parameter at its default; a
    setting the retriever or its fusion does not take is an error."""
    params = _kind_params(kind)
    by_setting = {p.setting: p for p in params}
    for setting in given:
        if setting not in by_setting:
            flag = "--" + setting.replace("_", "-")
            raise SpecError(f"{setting} ({flag}) does not apply to retrieval {kind.name!r}: {_applies(setting)}")
    values: dict[str, ParamValue] = {p.name: p.parse(given[p.setting]) for p in params if p.setting in given}
    if kind.fusable:
        return RetrievalSpec(kind.name, tuple((p, values.get(p.name, p.default)) for p in params))  # type: ignore[misc]
    return _hybrid(kind, params, values)


def _hybrid(kind: RetrieverKind, params: tuple[Param, ...], values: dict[str, ParamValue]) -> RetrievalSpec:
    defaults = {p.name: p.default for p in params}
    fuse = values.get("fuse", defaults["fuse"])
    assert isinstance(fuse, tuple)
    if len(fuse) < 2 or len(set(fuse)) != len(fuse):
        raise SpecError(
            f"fuse {'+'.join(map(str, fuse))!r} must name two or more different retrievers (e.g. dense,bm25)"
        )
    method = fusion(str(values.get("fusion", defaults["fusion"])))
    for name, setting in (("k", "fusion_k"), ("weights", "fusion_weights"), ("norm", "fusion_norm")):
        if name in values and name not in method.takes:
            takers = (
                "rrf" if name == "k" else "wsum" if name == "weights" else "the score fusions (wsum, sum, mnz, max)"
            )
            raise SpecError(f"{setting} applies to --fusion {takers}, not {method.name}")
    out: list[tuple[str, ParamValue]] = [("fuse", fuse), ("fusion", method.name)]
    if "k" in method.takes:
        out.append(("k", values.get("k", defaults["k"])))  # type: ignore[arg-type]
    if "weights" in method.takes:
        weights = values.get("weights") or tuple(round(1 / len(fuse), 6) for _ in fuse)
        assert isinstance(weights, tuple)
        if len(weights) != len(fuse):
            raise SpecError(
                f"fusion_weights {'+'.join(map(str, weights))} gives {len(weights)} weights for {len(fuse)} fused "
                f"retrievers ({'+'.join(map(str, fuse))}): give one weight per retriever, in --fuse order"
            )
        out.append(("weights", tuple(float(w) for w in weights)))
    if "norm" in method.takes:
        out.append(("norm", values.get("norm", defaults["norm"])))  # type: ignore[arg-type]
    out.append(("depth", values.get("depth", defaults["depth"])))  # type: ignore[arg-type]
    component_settings = {p.name for p in kind.params}
    for fused in fuse:
        for p in retriever(str(fused)).params:
            if p.name not in component_settings:
                out.append((p.name, values.get(p.name, p.default)))  # type: ignore[arg-type]
                component_settings.add(p.name)
    for name in values:
        if name not in dict(out):
            raise SpecError(
                f"{_param(kind.name, name).setting} applies to none of the fused retrievers {'+'.join(map(str, fuse))}"
            )
    by_name = {p.name: p for p in params}
    return RetrievalSpec(kind.name, tuple((by_name[n], v) for n, v in out))


def _applies(setting: str) -> str:
    owners = [r.name for r in RETRIEVERS if any(p.setting == setting for p in r.params)]
    if not owners:
        return "it is no retrieval setting"
    return f"it is a setting of {' and '.join(owners)}" + (
        " (and of a hybrid fusing it)" if "hybrid" not in owners else ""
    )


def resolve(text: str, settings: Mapping[str, object]) -> RetrievalSpec:
    """The retrieval ``text`` names (``--retrieval``), with the retrieval settings given by flags or spec keys
    (``settings``: spec key -> value, only those given) applied over it."""
    base = parse_retrieval(text)
    if not settings:
        return base
    kind = retriever(base.kind)
    given: dict[str, object] = {p.setting: v for p, v in _explicit(base, text)}
    given.update(settings)
    return complete(kind, given)


def _explicit(spec: RetrievalSpec, text: str) -> list[tuple[Param, ParamValue]]:
    """The parameters ``text`` itself names (not filled in by default)."""
    _, colon, rest = text.strip().partition(":")
    named = {item.partition("=")[0].strip().lower() for item in rest.split(",")} if colon else set()
    return [(p, v) for p, v in spec.params if p.name.lower() in named]


def with_setting(text: str, setting: str, value: object) -> RetrievalSpec:
    """The retrieval ``text`` names with one setting (spec key) changed: a sweep axis's value. A retriever that does
    not take ``setting`` is replaced by the first declared one that does, at its defaults (``fusion_k`` over
    ``dense`` is ``hybrid:k=...``: RRF of dense and bm25; ``sparse_top_k`` over ``dense`` is ``sparse``). A new
    ``fusion`` drops the settings the old one took and it does not (RRF's ``k``, wsum's ``weights``); weights are
    wsum's, so ``fusion_weights`` makes the fusion wsum."""
    base = parse_retrieval(text)
    kind = retriever(base.kind)
    if setting not in {p.setting for p in _kind_params(kind)}:
        owners = [r for r in RETRIEVERS if any(p.setting == setting for p in r.params)]
        if not owners:
            raise SpecError(f"{setting} is no retrieval setting")
        kind, base = owners[0], parse_retrieval(owners[0].name)
    given: dict[str, object] = {p.setting: v for p, v in base.params}
    given[setting] = value
    if setting == "fusion_weights":
        given["fusion"] = "wsum"
    if setting in ("fusion", "fusion_weights"):
        takes = fusion(str(retrieval_param("fusion").parse(given["fusion"]))).takes
        for name, key in (("k", "fusion_k"), ("weights", "fusion_weights"), ("norm", "fusion_norm")):
            if name not in takes:
                given.pop(key, None)
    return complete(kind, given)


def canonical(text: str) -> str:
    """The canonical text of a retrieval (defaults filled in)."""
    return parse_retrieval(text).text


RETRIEVAL_SETTINGS: tuple[str, ...] = tuple(p.setting for p in all_params())
