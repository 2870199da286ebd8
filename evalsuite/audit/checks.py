"""The audit's checks: one family of the check engine (``Check[AuditContext]``, ``evalsuite/checks/``), run by its
one runner.

Adding an audit check is one declaration and its test: a ``Check[AuditContext]`` declaration here (``run`` returns
a :class:`~evalsuite.checks.CheckOutcome` named ``name`` whose message starts with ``label + ":"``), one
entry in :data:`AUDIT_CHECKS` where it should run, its threshold as one :class:`~.settings.AuditSettings` field
(+ its option in ``audit/options.py``), and its test in ``tests/audit/`` (a faithful index passes, the fault it
names fails). The CLI, the pytest items, audit.json and report.md follow from the list (:func:`audit_checks`).
From another package: the declaration wrapped in ``PluginCheck(family="audit", check=...)``
(``evalsuite.checks.plugins``) and named by an entry point of the group ``evalsuite.checks``; it runs after the
built-in checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.errors import IndexSourceError
from ..checks import Check, CheckOutcome
from ..checks.detection import DETECT_CONFIDENCE, detectable_share, detection_probability
from ..checks.plugins import with_plugins
from .collisions import COLLISIONS
from .diagnosis import share_text

if TYPE_CHECKING:
    from .context import AuditContext

SHOWN = 5  # ids listed in a message


def _listed(ids: list[str], n: int = SHOWN, total: int | None = None) -> str:
    total = len(ids) if total is None else total
    return ", ".join(ids[:n]) + (f" (+{total - n} more)" if total > n else "")


# --- structure -----------------------------------------------------------------------------------------------
COMPATIBLE = {"cosine": ("ip", "cosine", "l2"), "dot": ("ip",), "l2": ("l2",)}  # contract similarity -> store metric


def check_shape(ctx: AuditContext) -> CheckOutcome:
    info, c = ctx.info(), ctx.prepared.contract
    problems = []
    if info.dim != c.dim:
        problems.append(f"dimension {info.dim}, the contract's is {c.dim}")
    if info.metric not in COMPATIBLE.get(c.similarity, ()):
        problems.append(
            f"metric {info.metric}, but the contract's similarity is {c.similarity} (searched with "
            f"{' or '.join(COMPATIBLE.get(c.similarity, ()))})"
        )
    details = {"dim": info.dim, "contract_dim": c.dim, "metric": info.metric, "similarity": c.similarity}
    where = f"{info.store} {info.index_type}"
    if problems:
        return CheckOutcome("shape", False, f"shape: {where}: {'; '.join(problems)}", details)
    return CheckOutcome(
        "shape", True, f"shape: {where}, {info.dim} dimensions, metric {info.metric} ({c.similarity})", details
    )


def check_ids(ctx: AuditContext) -> CheckOutcome:
    from .idcolumn import IdColumn, compare_ids

    s = ctx.scan()
    cmp = compare_ids(s.ids, IdColumn.of(ctx.prepared.dataset.doc_ids), 50)
    unknown, missing, dup = cmp.unknown, cmp.missing, cmp.duplicated
    if cmp.all_integer:
        raise IndexSourceError(
            f"--index {ctx.info().location}: every stored id is an integer ({_listed(unknown, 3, cmp.n_unknown)}) and "
            "none is a chunk id of the dataset: the index keeps FAISS int ids; give --ids the sidecar mapping them to "
            "chunk ids"
        )
    n_corpus = len(ctx.corpus_ids)
    details: dict[str, Any] = {
        "count": s.count,
        "corpus": n_corpus,
        "duplicated": {k: v for k, v in list(dup.items())[:50]},
        "n_duplicated": len(dup),
        "missing": missing[:50],
        "n_missing": cmp.n_missing,
        "unknown": unknown[:50],
        "n_unknown": cmp.n_unknown,
    }
    problems = []
    if dup:
        extra = sum(len(v) - 1 for v in dup.values())
        first = next(iter(dup))
        rows = dup[first]
        batch = _copied_run(dup)
        problems.append(
            f"{len(dup)} chunk ids stored more than once ({extra} extra rows, {extra / n_corpus:.1%} of the corpus; "
            f"first {first} on rows {', '.join(map(str, rows[:3]))})"
            + (
                f": rows {batch[0]}–{batch[1]} stored again at {batch[2]}–{batch[3]}, a batch appended twice (a retry)"
                if batch
                else ""
            )
        )
    if missing:
        problems.append(
            f"{cmp.n_missing} chunks of the corpus missing from the index: {_listed(missing, total=cmp.n_missing)}"
        )
    if unknown:
        problems.append(f"{cmp.n_unknown} stored ids the corpus does not know: {_listed(unknown, total=cmp.n_unknown)}")
    head = f"ids: {s.count} vectors for {n_corpus} chunks"
    if problems:
        return CheckOutcome("ids", False, f"{head}: {'; '.join(problems)}", details)
    return CheckOutcome("ids", True, f"{head}, each stored once", details)


def _copied_run(dup: dict[str, list[int]]) -> tuple[int, int, int, int] | None:
    """(first, last, copy first, copy last) when the duplicated rows are one run stored again as one run."""
    firsts = sorted(v[0] for v in dup.values())
    seconds = sorted(v[1] for v in dup.values())
    if firsts[-1] - firsts[0] + 1 == len(firsts) and seconds[-1] - seconds[0] + 1 == len(seconds):
        return firsts[0], firsts[-1], seconds[0], seconds[-1]
    return None


def check_norms(ctx: AuditContext) -> CheckOutcome:
    s, c, info = ctx.scan(), ctx.prepared.contract, ctx.info()
    norms = s.norms.astype(np.float64)
    usable = np.isfinite(norms) & (norms > 0)
    off = np.flatnonzero(usable & (np.abs(norms - 1.0) > ctx.settings.norm_tol)) if c.normalize else np.zeros(0, int)
    details: dict[str, Any] = {
        "non_finite": [s.ids[r] for r in s.non_finite[:50]],
        "n_non_finite": len(s.non_finite),
        "zero": [s.ids[r] for r in s.zero[:50]],
        "n_zero": len(s.zero),
        "normalize": c.normalize,
        "n_off_one": int(off.size),
        "share_off_one": round(off.size / max(1, s.count), 6),
        "off_one": [s.ids[r] for r in off[:50].tolist()],
        "min_norm": float(norms[usable].min()) if usable.any() else None,
        "max_norm": float(norms[usable].max()) if usable.any() else None,
    }
    problems = []
    if s.non_finite:
        problems.append(f"{len(s.non_finite)} vectors with NaN/inf: {_listed([s.ids[r] for r in s.non_finite])}")
    if s.zero:
        problems.append(f"{len(s.zero)} zero vectors: {_listed([s.ids[r] for r in s.zero])}")
    if off.size:
        lo, hi = float(norms[off].min()), float(norms[off].max())
        named = (
            f"an inner-product index over unnormalized vectors ranks by vector length, not by {c.similarity}: "
            if info.metric == "ip" and c.similarity == "cosine"
            else ""
        )
        problems.append(
            f"{named}{off.size} of {s.count} vectors ({off.size / s.count:.1%}) have norms off 1 (|norm - 1| > "
            f"{ctx.settings.norm_tol:g}; {lo:.3f}..{hi:.3f}) although the contract normalizes: "
            f"{_listed([s.ids[r] for r in off.tolist()])}; fix: normalize before writing and re-ingest them"
        )
    if problems:
        return CheckOutcome("norms", False, f"norms: {'; '.join(problems)}", details)
    what = "unit norm" if c.normalize else "finite and non-zero"
    return CheckOutcome("norms", True, f"norms: all {s.count} vectors {what}", details)


# --- fidelity ------------------------------------------------------------------------------------------------
def detection_statement(n: int, count: int, share: float, everything: bool) -> str:
    if everything:
        return f"every one of the {count} stored vectors was compared (no sampling)"
    p = detection_probability(share, n)
    return (
        f"a bad share >= {share:.0%} of the {count} stored vectors would have been found with probability "
        f"{p:.4f} >= {DETECT_CONFIDENCE} ({n} rows sampled at random; any share >= {detectable_share(n):.1%} "
        f"with probability >= {DETECT_CONFIDENCE})"
    )


def check_fidelity(ctx: AuditContext) -> CheckOutcome:
    from .diagnosis import diagnose_infidelity

    fid, st = ctx.fidelity(), ctx.settings
    _, everything = ctx.sample_plan()
    count = ctx.info().count
    statement = detection_statement(len(fid.rows) + fid.skipped_unknown, count, st.detect, everything)
    if not len(fid.ids):
        return CheckOutcome("fidelity", None, "fidelity: no sampled row has a chunk id the corpus knows", {})
    cos = np.nan_to_num(fid.cosine, nan=-1.0)
    order = np.argsort(cos, kind="stable")
    worst = float(cos[order[0]])  # the worst case decides
    bad = np.flatnonzero(cos < st.min_cosine)
    worst_ids = [{"id": fid.ids[i], "row": int(fid.rows[i]), "cosine": round(float(cos[i]), 6)} for i in order[:10]]
    details: dict[str, Any] = {
        "sampled": len(fid.ids),
        "skipped_unknown": fid.skipped_unknown,
        "all": everything,
        "min_cosine": worst,
        "threshold": st.min_cosine,
        "bad": int(bad.size),
        "bad_share": round(bad.size / len(fid.ids), 6),
        "worst": worst_ids,
        "detection": {
            "share": st.detect,
            "probability": round(detection_probability(st.detect, len(fid.ids)), 6),
            "confidence": DETECT_CONFIDENCE,
            "statement": statement,
        },
    }
    shown = ", ".join(f"{w['id']} ({w['cosine']:.4f})" for w in worst_ids[:SHOWN])
    if bad.size:
        diagnosis = diagnose_infidelity(ctx, fid, bad)
        details["diagnosis"] = diagnosis.to_dict()
        return CheckOutcome(
            "fidelity",
            False,
            f"fidelity: min cosine {worst:.4f} < {st.min_cosine} between stored and reference vectors; "
            f"{share_text(int(bad.size), len(fid.ids))} differ; worst: {shown}\n  "
            + "\n  ".join(diagnosis.sentences()),
            details,
        )
    return CheckOutcome(
        "fidelity",
        True,
        f"fidelity: min cosine {worst:.6f} >= {st.min_cosine} over {len(fid.ids)} sampled rows (worst {shown}); "
        f"{statement}",
        details,
    )


# --- retrieval -----------------------------------------------------------------------------------------------
def _no_relevant(qrels: Any, ranking: Any, qids: list[str], k: int) -> list[str]:
    return [q for q in qids if not any(qrels.get(q, {}).get(d, 0) > 0 for d in ranking.top(q, k))]


def check_retrieval(ctx: AuditContext) -> CheckOutcome:
    from .gates import audit_gates, judge_sides

    ds, st = ctx.prepared.dataset, ctx.settings
    if not ds.qrels:
        return CheckOutcome("retrieval", None, "retrieval: the dataset has no judged queries", {})
    mismatch = _dim_mismatch(ctx, "retrieval")
    if mismatch is not None:
        return mismatch
    ref, idx, info = ctx.reference_retrieval(), ctx.index_retrieval(), ctx.info()
    metrics = [m for m in ctx.prepared.spec.metrics if m in idx.per_query]
    gates = audit_gates(st.gates, metrics, st.max_delta)
    outcomes, rows = judge_sides(
        gates,
        ("index", idx.result_metrics, idx.per_query),
        ("reference", ref.result_metrics, ref.per_query),
        ds.queries,
    )
    qids = sorted(set(idx.deployed.doc_ids))
    k = st.k
    none_idx = _no_relevant(ds.qrels, idx.deployed, qids, k)
    none_ref = _no_relevant(ds.qrels, ref.deployed, qids, k)
    params = ", ".join(f"{p}={v}" for p, v in info.search_params.items()) or "no parameters"
    details: dict[str, Any] = {
        "margin": st.max_delta,
        "gates": rows,
        "metrics": {r["metric"]: r for r in rows.values()},
        "queries": len(qids),
        "search": {"index_type": info.index_type, "params": dict(info.search_params)},
        "no_relevant_at_k": {"k": k, "index": len(none_idx), "reference": len(none_ref), "queries": none_idx[:50]},
        "encoded_by": "endpoint" if ctx.query_encoder is not None else "reference",
    }
    failing = [o for o in outcomes if not o.passed]
    primary = next((r for r in rows.values() if r["metric"] == "ndcg@10" and r["delta"] is not None), None)
    primary = primary or next(iter(rows.values()))
    ci = f" (95% CI {primary['ci_low']:+.4f} .. {primary['ci_high']:+.4f})" if primary["ci_low"] is not None else ""
    delta = f", delta {primary['delta']:+.4f}{ci}" if primary["delta"] is not None else ""
    head = (
        f"{primary['metric']} index {primary['index']:.4f} vs reference {primary['reference'] or 0:.4f}{delta}; "
        f"searched as deployed ({info.index_type}, {params}); queries with no relevant chunk in the top {k}: "
        f"{len(none_idx)} of {len(qids)} (reference {len(none_ref)})"
    )
    if failing:
        listed = "; ".join(f"{o.gate.expr} {o.verdict.upper()}: {rows[o.gate.expr]['explanation']}" for o in failing)
        return CheckOutcome("retrieval", False, f"retrieval: {listed}; {head}", details)
    return CheckOutcome("retrieval", True, f"retrieval: {', '.join(g.expr for g in gates)} pass: {head}", details)


def _dim_mismatch(ctx: AuditContext, name: str) -> CheckOutcome | None:
    """A check that searches the index with the contract's query vectors cannot run on another dimension."""
    info, c = ctx.info(), ctx.prepared.contract
    if info.dim == c.dim:
        return None
    return CheckOutcome(
        name,
        None,
        f"{name.replace('_', ' ')}: not run: the index holds {info.dim} dimensions, queries {c.dim} (shape)",
        {},
    )


def check_ann_recall(ctx: AuditContext) -> CheckOutcome:
    mismatch = _dim_mismatch(ctx, "ann_recall")
    if mismatch is not None:
        return mismatch
    idx, info, k = ctx.index_retrieval(), ctx.info(), ctx.settings.k
    qids = list(idx.exact.doc_ids)
    per = {
        q: len(set(idx.deployed.top(q, k)) & set(idx.exact.top(q, k))) / max(1, len(idx.exact.top(q, k))) for q in qids
    }
    recall = float(np.mean(list(per.values()))) if per else 1.0
    lowest = sorted(per, key=lambda q: (per[q], q))[:SHOWN]
    params = ", ".join(f"{p}={v}" for p, v in info.search_params.items()) or "no parameters"
    details = {
        "k": k,
        "recall": round(recall, 6),
        "threshold": ctx.settings.min_ann_recall,
        "index_type": info.index_type,
        "params": dict(info.search_params),
        "lowest": {q: round(per[q], 4) for q in lowest},
    }
    head = (
        f"recall@{k} {recall:.4f} of {info.index_type} ({params}) against its own exact search over {len(qids)} queries"
    )
    if recall < ctx.settings.min_ann_recall:
        return CheckOutcome(
            "ann_recall",
            False,
            f"ann recall: {head} < {ctx.settings.min_ann_recall}; the approximate search loses what the exact "
            f"search finds (raise nprobe / efSearch / bits); lowest: {', '.join(f'{q} ({per[q]:.1f})' for q in lowest)}",
            details,
        )
    return CheckOutcome("ann_recall", True, f"ann recall: {head} >= {ctx.settings.min_ann_recall}", details)


# --- manifest ------------------------------------------------------------------------------------------------
def check_manifest(ctx: AuditContext) -> CheckOutcome:
    from ..verify.checks import Manifest

    if ctx.manifest is None:
        return CheckOutcome("manifest", None, "manifest: no --manifest given and none beside the index", {})
    m = Manifest.load(ctx.manifest)
    c, info = ctx.prepared.contract, ctx.info()
    diff = m.contract.describe_diff(c, labels=("manifest", "audit"), ignore=("index",))
    problems = [diff] if diff else []
    if m.contract.dim != info.dim:
        problems.append(f"the index holds {info.dim} dimensions, the manifest says {m.contract.dim}")
    details = {"manifest": str(ctx.manifest), "differences": problems}
    if problems:
        return CheckOutcome("manifest", False, f"manifest: {ctx.manifest} disagrees: {'; '.join(problems)}", details)
    return CheckOutcome("manifest", True, f"manifest: {ctx.manifest} matches the contract and the index", details)


SHAPE = Check(
    name="shape",
    label="shape",
    run=check_shape,
    explanation="the index's dimension and metric against the contract's dimension and similarity",
    example="shape: faiss IndexFlatL2: metric l2, but the contract's similarity is dot (searched with ip)",
)
IDS = Check(
    name="ids",
    label="ids",
    run=check_ids,
    explanation="over every stored row: the count against the corpus, ids stored twice, chunks missing, ids unknown",
    example="ids: 490 vectors for 458 chunks: 32 chunk ids stored more than once (32 extra rows, 7.0% of the "
    "corpus; first d64 on rows 64, 458): rows 64–95 stored again at 458–489, a batch appended twice (a retry)",
)
NORMS = Check(
    name="norms",
    label="norms",
    run=check_norms,
    thresholds=("norm_tol",),
    explanation="over every stored row: NaN/inf and zero vectors, and the share of norms off 1 when the contract "
    "normalizes (an inner-product index over unnormalized vectors is named)",
    example="norms: an inner-product index over unnormalized vectors ranks by vector length, not by cosine: 46 of "
    "458 vectors (10.0%) have norms off 1",
)
FIDELITY = Check(
    name="fidelity",
    label="fidelity",
    run=check_fidelity,
    thresholds=("min_cosine", "detect"),
    explanation="a seeded sample of stored rows (sized by --audit-detect, or all with --audit-all) against the "
    "reference vectors of their chunks' texts; the worst cosine decides; a failure is diagnosed (mapping "
    "fault or stale vectors, with the share and its 95% CI)",
    example="fidelity: min cosine 0.2311 < 0.999; mapping fault: ids shifted by +1 inside 1 run of 31 consecutive "
    "rows, first at chunk d32",
)
RETRIEVAL = Check(
    name="retrieval",
    label="retrieval",
    run=check_retrieval,
    thresholds=("max_delta", "k"),
    per_dataset=True,
    explanation="the labelled queries searched through the index as deployed against the reference's exact "
    "search over reference vectors: every metric non-inferior within the margin (paired bootstrap CI)",
    example="retrieval: not non-inferior within 0.01: ndcg@10 -0.0830 (fail)",
)
ANN_RECALL = Check(
    name="ann_recall",
    label="ann recall",
    run=check_ann_recall,
    thresholds=("min_ann_recall", "k"),
    explanation="the index's own search (its parameters as deployed) against its exact search over the same "
    "stored vectors: recall@k",
    example="ann recall: recall@10 0.4120 of IndexIVFFlat (nlist=64, nprobe=1) against its own exact search < 0.9",
)
MANIFEST = Check(
    name="manifest",
    label="manifest",
    run=check_manifest,
    explanation="the index's manifest.json (from `evalsuite run`) against the audited contract and the index",
    example="manifest: index/manifest.json disagrees: pooling: manifest 'mean', audit 'cls'",
)

AUDIT_CHECKS: tuple[Check[AuditContext], ...] = (
    SHAPE,
    IDS,
    NORMS,
    COLLISIONS,
    FIDELITY,
    RETRIEVAL,
    ANN_RECALL,
    MANIFEST,
)


def audit_checks() -> tuple[Check[AuditContext], ...]:
    """Every audit check in run order, the installed plug-ins' after the built-in ones: what the runner, the
    pytest items and the reports read."""
    return with_plugins("audit", AUDIT_CHECKS)
