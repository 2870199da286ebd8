"""The diagnosis of a failed sparse check: which sparse departure the served vectors show.

The served answers of the probe texts are read again as they came (:func:`~evalsuite.encode.sparse_endpoint.
raw_sparse_answers`: negative weights, a dense vector, weights for BOS and EOS are kept, not refused), and compared,
text by text, with the reference transformed by each departure it is known to take (:data:`DEPARTURES`), built from
the same per-token scores (BGE-M3's ``sparse_linear`` before the ReLU, the special tokens included):

* special tokens kept: BOS/EOS (every special token) weighed like any token;
* ReLU missing: the raw scores, negative ones included;
* weights summed instead of max-pooled per token id;
* another pruning depth: only each text's ``k`` largest weights, ``k`` on a ladder and the most the server kept;
* a dense vector served where sparse weights were expected (mteb#4761's class): every answer a list of numbers of
  one length whatever the text's number of tokens.

The departure whose vectors equal the served ones (every text: the same active token ids, every weight within the
weight tolerance) while the contract's do not is named, with its remedy; none: the closest are shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...base.errors import EndpointError, ModelError
from ...diagnose.score import Cause
from .compare import compare_all
from .registry import SPARSE_CHECKS

if TYPE_CHECKING:
    from ...checks import CheckOutcome
    from ...encode.sparse import SparseVector
    from .context import SparseCanaryContext

LADDER = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
MIN_TOL = 1e-5  # a departure's vectors must equal the served ones to at least this (and the weight tolerance)


@dataclass(frozen=True)
class SparseDeparture:
    """One way a server departs from BGE-M3's lexical weights: its triage stage, how its cause reads, its remedy."""

    factor: str
    stage: str
    cause: str  # "{value}": the departure's value (a pruning depth, a served length)
    remedy: str


DEPARTURES: tuple[SparseDeparture, ...] = (
    SparseDeparture(
        "dense_served",
        "shape",
        "a dense vector served where sparse weights were expected (mteb#4761's class): every answer is {value} "
        "numbers whatever the text's length",
        "serve the model's sparse head: vLLM with the architecture BgeM3EmbeddingModel, --pooler-config "
        '\'{{"task":"token_classify"}}\' and POST /pooling task token_classify; TEI POST /embed_sparse',
    ),
    SparseDeparture(
        "relu",
        "shape",
        "ReLU missing: the served weights are sparse_linear's raw scores, negative ones included",
        "apply ReLU to the per-token scores (BGE-M3's lexical weights are relu(sparse_linear(h)))",
    ),
    SparseDeparture(
        "specials",
        "input",
        "special tokens kept: {value} are weighed like any token",
        "leave the special tokens out (FlagEmbedding's lexical_weights drop <s>, </s>, <pad> and <unk>; vLLM's "
        "token_classify cuts BOS and EOS)",
    ),
    SparseDeparture(
        "summed",
        "shape",
        "weights summed instead of max-pooled per token id: a repeated token weighs the sum of its occurrences",
        "keep the largest weight per token id (the maximum over its occurrences), as FlagEmbedding does",
    ),
    SparseDeparture(
        "top_k",
        "truncation",
        "another pruning depth: the server keeps only each text's {value} largest weights",
        "serve every weight, or declare the same pruning in the contract (--sparse-top-k {value})",
    ),
)
_BY_FACTOR = {d.factor: d for d in DEPARTURES}


@dataclass(frozen=True)
class SparseFit:
    """One alternative against the served vectors: the worst text's token overlap and the largest weight
    difference over every id (0 for an id neither holds)."""

    label: str
    factor: str | None  # None: the contract
    value: object
    min_overlap: float
    max_difference: float
    worst: str

    def matches(self, tol: float) -> bool:
        return self.min_overlap >= 1.0 and self.max_difference <= tol

    def to_dict(self) -> dict[str, object]:
        return {
            "label": self.label,
            "factor": self.factor,
            "value": self.value,
            "min_overlap": round(self.min_overlap, 6),
            "max_difference": self.max_difference,
            "worst": self.worst,
        }


@dataclass(frozen=True)
class SparseDiagnosis:
    """The alternatives ranked by fit; ``causes``: the departure named (empty when none explains the served
    vectors, or the contract's own do)."""

    what: str
    texts: int
    ranked: tuple[SparseFit, ...]
    contract: SparseFit | None
    causes: tuple[Cause, ...]
    evidence: str = ""
    not_tested: tuple[str, ...] = ()
    agrees: bool = False  # the served vectors are the contract's, text by text (the fault is elsewhere)

    @property
    def explained(self) -> bool:
        return bool(self.causes)

    def sentence(self) -> str:
        if self.explained:
            return (
                f"cause: {' and '.join(c.text for c in self.causes)}; evidence: {self.evidence}; fix: "
                f"{'; '.join(dict.fromkeys(c.remedy for c in self.causes))}"
            )
        if self.agrees:
            return f"cause: not in the per-text vectors ({self.what}: the served vectors match the reference's)"
        if not self.ranked:
            return f"cause: not diagnosed ({self.what}: {'; '.join(self.not_tested) or 'no served vectors'})"
        closest = "; ".join(
            f"{f.label}: min token overlap {f.min_overlap:.3f}, max weight difference {f.max_difference:.3g}"
            for f in self.ranked[:3]
        )
        return f"cause: no sparse departure explains the served vectors ({self.what}); closest: {closest}"

    def to_dict(self) -> dict[str, object]:
        return {
            "what": self.what,
            "explained": self.explained,
            "sentence": self.sentence(),
            "causes": [c.to_dict() for c in self.causes],
            "contract": None if self.contract is None else self.contract.to_dict(),
            "ranked": [f.to_dict() for f in self.ranked[:8]],
            "not_tested": list(self.not_tested),
        }

    def markdown(self) -> list[str]:
        """report.md: the diagnosis and its closest alternatives."""
        from ...reports.markdown import table

        rows = [
            (str(i + 1), f.label, f"{f.min_overlap:.3f}", f"{f.max_difference:.3g}")
            for i, f in enumerate(self.ranked[:5])
        ]
        lines = [f"### Diagnosis: {self.what}", "", self.sentence(), ""]
        if rows:
            lines.append(table(["rank", "alternative", "min token overlap", "max weight difference"], rows))
        if self.not_tested:
            lines += ["", "Not tested: " + "; ".join(self.not_tested)]
        return [*lines, ""]


def _cause(factor: str, value: object) -> Cause:
    d = _BY_FACTOR[factor]
    return Cause(factor, d.stage, value, d.cause.format(value=value), d.remedy.format(value=value))


def pool(
    ids: np.ndarray,
    scores: np.ndarray,
    specials: set[int],
    *,
    relu: bool = True,
    keep_specials: bool = False,
    summed: bool = False,
) -> SparseVector:
    """One text's sparse vector from its per-token ``scores`` (``ids``: its token ids, specials included): ReLU'd
    or not, the special tokens kept or not, one weight per id (the maximum, or the sum, over its occurrences);
    the ids whose weight is 0 left out."""
    w = np.maximum(scores, 0.0) if relu else np.asarray(scores, dtype=np.float64)
    keep = np.ones(len(ids), dtype=bool) if keep_specials else ~np.isin(ids, sorted(specials))
    ids, w = np.asarray(ids)[keep], np.asarray(w, dtype=np.float64)[keep]
    if not len(ids):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    unique, inverse = np.unique(ids, return_inverse=True)
    if summed:
        agg = np.zeros(len(unique))
        np.add.at(agg, inverse, w)
    else:
        agg = np.full(len(unique), -np.inf)
        np.maximum.at(agg, inverse, w)
    nz = agg != 0
    return unique[nz].astype(np.int64), agg[nz].astype(np.float32)


@dataclass(frozen=True)
class Served:
    """The served answers read leniently: a vector per text (None where it could not be placed on token ids) and,
    per text, the answer's length when it was a list of numbers that fits no token list."""

    vectors: tuple[SparseVector | None, ...]
    dense_lengths: tuple[int | None, ...]
    bos_eos_weighed: bool


def _numbers(item: object) -> np.ndarray | None:
    if isinstance(item, list) and item and all(isinstance(r, list) and len(r) == 1 for r in item):
        item = [r[0] for r in item]
    if isinstance(item, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in item):
        return np.asarray(item, dtype=np.float64)
    return None


def read_served(ctx: SparseCanaryContext, texts: Sequence[str]) -> Served:
    from ...encode.sparse_endpoint import raw_sparse_answers

    answers = raw_sparse_answers(ctx.client(), texts, ctx.settings.api, batch_size=ctx.settings.batch_size)
    tokenizer, max_length = ctx.encoder.tokenizer(), ctx.contract.max_length
    vectors: list[SparseVector | None] = []
    lengths: list[int | None] = []
    weighed = False
    specials = ctx.encoder.special_ids()
    if ctx.settings.api == "vllm":
        cut = ctx.encoder.token_ids(texts)
        full = [list(x) for x in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]
        for answer, c, f in zip(answers, cut, full, strict=True):
            w = _numbers(answer)
            ids = None if w is None else c if len(w) == len(c) else f if len(w) == len(f) else None
            weighed |= ids is f and len(f) != len(c)
            # BOS and EOS cut: the client leaves the other special tokens out too; weighed: every token kept
            is_cut = ids is c
            vectors.append(
                None
                if ids is None or w is None
                else pool(np.array(ids), w, specials if is_cut else set(), relu=False, keep_specials=not is_cut)
            )
            lengths.append(len(w) if w is not None and ids is None else None)
        return Served(tuple(vectors), tuple(lengths), weighed)
    for answer in answers:
        w = _numbers(answer)
        if w is not None and len(w):
            vectors.append(None)
            lengths.append(len(w))
            continue
        if not isinstance(answer, list) or not all(isinstance(e, dict) for e in answer):
            vectors.append(None)
            lengths.append(None)
            continue
        index = np.array([int(e.get("index", -1)) for e in answer], dtype=np.int64)
        values = np.array([float(e.get("value", 0.0)) for e in answer], dtype=np.float64)
        vectors.append(pool(index, values, set(), relu=False, keep_specials=True))
        lengths.append(None)
    return Served(tuple(vectors), tuple(lengths), False)


def _alternatives(
    scores: list[tuple[np.ndarray, np.ndarray]], specials: set[int], served: Sequence[SparseVector]
) -> list[tuple[str, str | None, object, list[SparseVector]]]:
    """(label, factor, value, vectors) of the contract and of each departure."""
    from ...encode.sparse import prune

    contract = [pool(i, s, specials) for i, s in scores]
    kept = sorted({int(t) for i, _ in scores for t in i if int(t) in specials})
    out: list[tuple[str, str | None, object, list[SparseVector]]] = [
        ("the contract (ReLU, max per token id, specials out)", None, None, contract),
        ("ReLU missing", "relu", None, [pool(i, s, specials, relu=False) for i, s in scores]),
        ("special tokens kept", "specials", kept, [pool(i, s, specials, keep_specials=True) for i, s in scores]),
        ("weights summed per token id", "summed", None, [pool(i, s, specials, summed=True) for i, s in scores]),
    ]
    most = max((len(i) for i, _ in served), default=0)
    for k in sorted({*LADDER, most}):
        if 0 < k < max((len(i) for i, _ in contract), default=0):
            out.append((f"top {k} weights per text", "top_k", k, [prune(i, w, k) for i, w in contract]))
    return out


def diagnose_sparse(ctx: SparseCanaryContext) -> SparseDiagnosis:
    probes = ctx.probes()
    tol = max(ctx.settings.weight_tol, MIN_TOL)
    what = f"{len(probes.ids)} texts"
    try:
        scores = ctx.encoder.token_scores(probes.texts)
    except ModelError as exc:
        return SparseDiagnosis(what, len(probes.ids), (), None, (), not_tested=(str(exc),))
    served = read_served(ctx, probes.texts)
    token_counts = [len(i) - 2 for i, _ in scores]
    dense = [n for n in served.dense_lengths if n is not None]
    if dense and len(dense) == len(probes.ids) and len(set(dense)) == 1 and len(set(token_counts)) > 1:
        hidden = int(ctx.prepared.model.hidden_size)
        note = " (the model's hidden size)" if dense[0] == hidden else ""
        evidence = (
            f"all {len(dense)} answers hold {dense[0]} numbers{note} while the texts hold "
            f"{min(token_counts)} to {max(token_counts)} tokens"
        )
        return SparseDiagnosis(what, len(probes.ids), (), None, (_cause("dense_served", dense[0]),), evidence)
    placed = [i for i, v in enumerate(served.vectors) if v is not None]
    if not placed:
        return SparseDiagnosis(
            what, len(probes.ids), (), None, (), not_tested=("no served answer could be placed on token ids",)
        )
    vectors = [v for v in served.vectors if v is not None]
    ids = [probes.ids[i] for i in placed]
    fits: list[SparseFit] = []
    for label, factor, value, alt in _alternatives([scores[i] for i in placed], ctx.encoder.special_ids(), vectors):
        per_text = compare_all(vectors, alt, edge=tol)
        worst = min(range(len(per_text)), key=lambda j: (per_text[j].overlap, -per_text[j].max_diff))
        fits.append(
            SparseFit(
                label,
                factor,
                value,
                min(f.overlap for f in per_text),
                max(f.max_diff for f in per_text),
                ids[worst],
            )
        )
    contract = fits[0]
    matching = [f for f in fits[1:] if f.matches(tol)]
    ranked = tuple(sorted(fits, key=lambda f: (not f.matches(tol), -f.min_overlap, f.max_difference)))
    skipped = len(probes.ids) - len(placed)
    if skipped:
        what += f" ({skipped} answer(s) that fit no token list left out)"
    if contract.matches(tol) or not matching:
        return SparseDiagnosis(what, len(placed), ranked, contract, (), agrees=contract.matches(tol))
    best = matching[0]  # DEPARTURES order; the smallest pruning depth first
    shown = best.value
    if best.factor == "specials":
        shown = "BOS and EOS" if served.bos_eos_weighed else _label_tokens(ctx, best.value)
    evidence = (
        f"the served vectors equal the reference's with {best.label} on all {len(placed)} texts (min token overlap "
        f"{best.min_overlap:.3f}, max weight difference {best.max_difference:.2g}; the contract's: min token overlap "
        f"{contract.min_overlap:.3f}, max weight difference {contract.max_difference:.3g})"
    )
    return SparseDiagnosis(what, len(placed), ranked, contract, (_cause(str(best.factor), shown),), evidence)


def _label_tokens(ctx: SparseCanaryContext, value: object) -> str:
    ids = [int(i) for i in value] if isinstance(value, list) else []
    names = ctx.encoder.tokenizer().convert_ids_to_tokens(ids)
    return ", ".join(f"{n} (id {i})" for i, n in zip(ids, names, strict=True))


def sparse_diagnoses(ctx: SparseCanaryContext, verdicts: Sequence[CheckOutcome]) -> tuple[SparseDiagnosis, ...]:
    """One diagnosis when a check the diagnosis reads (``diagnosed``) failed; none otherwise, or when the server
    cannot be asked again."""
    diagnosed = {c.name for c in SPARSE_CHECKS if c.diagnosed}
    if not any(v.passed is False and v.check in diagnosed for v in verdicts):
        return ()
    make: Callable[[], SparseDiagnosis] = lambda: diagnose_sparse(ctx)  # noqa: E731
    try:
        return (ctx.shared("diagnosis", make),)
    except EndpointError:
        return ()


__all__ = ["DEPARTURES", "SparseDiagnosis", "diagnose_sparse", "pool", "sparse_diagnoses"]
