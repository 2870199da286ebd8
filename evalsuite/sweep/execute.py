"""Run a planned sweep: one forward pass per (role, forward key), every pooling and dim from it.

Passes sharing an encoder (dtype, max length) run back to back and the encoder is dropped
before the next one loads, so at most one model is in memory. Only pooled vectors are kept
between passes; each distinct contract is then scored once with :func:`evalsuite.run.pipeline.score`
(exact flat search); a contract with another index is searched with it and measured against the
flat search of the same vectors (:mod:`.index_cells`). What it returns is declared in :mod:`.results`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..contract import Contract
from ..encode.base import Encoder, Releasable
from ..encode.cache import Caching
from ..encode.ray_pool import executor_scope
from ..run.cache.results import ResultStore, store_for
from ..run.pipeline import Prepared, make_encoder, score
from ..run.record import role_stats_since, stats_snapshot
from ..run.result import Result
from .axes import Axis
from .compare import cells_statistics, compare_cells
from .index_cells import IndexCell, compare_with_flat, score_index
from .plan import Cell, ForwardPass, base_cell, plan_passes, validate_cells
from .results import CellResult, PassRecord, SweepResult, SweepStats

EncoderFactory = Callable[[str, int], Encoder]


@dataclass
class _Encoded:
    pooled: dict[tuple[tuple[str, ...], str], np.ndarray]
    records: list[PassRecord]
    models_loaded: int
    cache: dict[str, int] | None
    cache_problems: list[str]
    device: str


def _warm_scoring(metrics: Sequence[str]) -> threading.Thread:
    """ranx imported and its kernels loaded (:func:`~evalsuite.scoring.metrics.warm`) in a background thread, off the
    critical path of a cold sweep: started once the model has loaded and run its first pass (so the two threads are
    not importing at the same time), joined before the first scoring. It computes nothing that is kept."""
    from ..scoring.metrics import warm

    def work() -> None:
        with contextlib.suppress(Exception):  # only a head start: the scoring imports and loads them itself
            warm(metrics)

    thread = threading.Thread(target=work, name="evalsuite-warm-scoring", daemon=True)
    thread.start()
    return thread


def _encode_passes(
    prepared: Prepared, passes: Sequence[ForwardPass], factory: EncoderFactory, metrics: Sequence[str] = ()
) -> _Encoded:
    """Run the passes in order, one encoder per (dtype, max length) alive at a time. Once a model has loaded, the
    scoring's kernels load in the background (:func:`_warm_scoring`) while the remaining passes run."""
    from ..encode.cache import cache_summary

    ds = prepared.dataset
    texts = {
        "query": ([ds.queries[i] for i in ds.query_ids], ds.query_ids),
        "document": (
            [t for _, chunk in ds.corpus_chunks(65536) for t in chunk],
            ds.doc_ids,
        ),  # one read of a disk corpus
    }
    done = _Encoded({}, [], 0, None, [], "cpu")
    used: list[Encoder] = []
    current: tuple[str, int] | None = None
    warming: threading.Thread | None = None
    for fp in passes:
        if fp.encoder_key != current:
            if used:
                _release(used[-1])
                gc.collect()
            used.append(factory(*fp.encoder_key))
            current = fp.encoder_key
        encoder = used[-1]
        role_texts, role_ids = texts[fp.role]
        before = stats_snapshot(encoder)
        t0 = time.perf_counter()
        vectors = encoder.encode(
            fp.contract.render_all(fp.role, role_texts), poolings=list(fp.poolings), ids=role_ids, role=fp.role
        )
        seconds = time.perf_counter() - t0
        if warming is None and metrics and (encoder.loads > 0 if isinstance(encoder, Caching) else True):
            warming = _warm_scoring(metrics)
        work = role_stats_since(encoder, before)[fp.role]
        for p in fp.poolings:
            done.pooled[(fp.key, p)] = vectors[p]
        done.records.append(
            PassRecord(
                role=fp.role,
                dtype=fp.dtype,
                max_length=fp.max_length,
                prefix=fp.prefix,
                poolings=fp.poolings,
                texts=len(role_texts),
                texts_encoded=work.texts,
                tokens_encoded=work.tokens,
                seconds=seconds,
            )
        )
    done.models_loaded = sum(e.loads if isinstance(e, Caching) else 1 for e in used)
    done.cache = cache_summary(used)
    done.cache_problems = [m for e in used if isinstance(e, Caching) for m in e.cache.problems]
    done.device = used[-1].device if used else "cpu"
    for e in used:
        _release(e)
    gc.collect()
    if warming is not None:
        warming.join()
    return done


def _release(encoder: Encoder) -> None:
    """Free the model an encoder holds; its counters (and cache) stay readable."""
    if isinstance(encoder, Releasable):
        encoder.release()


def run_sweep(
    prepared: Prepared,
    cells: Sequence[Cell],
    metrics: Sequence[str] | None = None,
    *,
    axes: Sequence[Axis] = (),
    grid: bool = False,
    encoder_factory: EncoderFactory | None = None,
    test: str = "student",
    alpha: float = 0.05,
    keep_vectors: bool = False,
) -> SweepResult:
    """Encode what ``cells`` and the base need in as few forward passes as possible, score every
    distinct contract once, and compare each cell with the base (delta and paired test)."""
    base = prepared.contract
    metrics = tuple(metrics or prepared.spec.metrics)
    validate_cells(cells, base, prepared.model)
    factory = encoder_factory or (lambda dtype, max_length: make_encoder(prepared, dtype=dtype, max_length=max_length))
    passes = plan_passes(base, cells)
    t0 = time.perf_counter()
    with executor_scope():  # on Ray: one actor pool for every forward pass, the model loaded once per actor
        enc = _encode_passes(prepared, passes, factory, metrics)
    encode_seconds = time.perf_counter() - t0
    seconds_by_key = {fp.key: rec.seconds for fp, rec in zip(passes, enc.records, strict=True)}

    def vectors(c: Contract, role: str) -> np.ndarray:
        return enc.pooled[(c.forward_key(role), c.pooling)]

    t1 = time.perf_counter()
    scored: dict[Contract, Result] = {}
    reports: dict[Contract, IndexCell] = {}

    def timing_of(c: Contract) -> dict[str, object]:
        return {
            "encode_seconds": round(sum(seconds_by_key[c.forward_key(r)] for r in ("query", "document")), 4),
            "shared_forward_passes": True,
            "queries": _role_timing(enc.records, passes, c.forward_key("query")),
            "documents": _role_timing(enc.records, passes, c.forward_key("document")),
        }

    for cell in [base_cell(base), *cells]:
        c = cell.contract
        flat = c.replace(index="flat")  # exact search over the same vectors: the index's ground truth
        if flat not in scored:
            scored[flat] = score(
                prepared,
                flat,
                vectors(flat, "query"),
                vectors(flat, "document"),
                metrics=metrics,
                timing=timing_of(flat),
                device=enc.device,
                keep_vectors=keep_vectors,
            )
        if c not in reports and (c != flat or cell.label("index") is not None):
            result, report = score_index(
                prepared,
                c,
                vectors(c, "query"),
                vectors(c, "document"),
                scored[flat],
                metrics=metrics,
                timing=timing_of(c),
                device=enc.device,
                keep_vectors=keep_vectors,
            )
            scored[c] = result
            reports[c] = compare_with_flat(report, result, scored[flat], metrics, test=test, alpha=alpha)
    score_seconds = time.perf_counter() - t1

    base_result = scored[base]
    store = store_for(prepared.spec)  # the result cache, for the statistics of each cell against the base
    out = []
    comparisons = {}
    statistics = cells_statistics(  # every cell at once: one draw of the resamples for all of them
        base_result.per_query,
        [scored[cell.contract].per_query for cell in cells],
        metrics,
        test=test,
        alpha=alpha,
        same_as_base=[cell.contract == base for cell in cells],
        store=store,
    )
    for cell, (p_values, comparisons[cell.name]) in zip(cells, statistics, strict=True):
        r = scored[cell.contract]
        delta = {m: r.metrics[m] - base_result.metrics[m] for m in metrics}
        measured = cell.label("index") is not None or cell.contract.index != "flat"
        index = reports.get(cell.contract) if measured else None
        out.append(CellResult(cell, r, delta, p_values, index=index))
    compared = compare_cells(
        comparisons,
        {c.cell.name: c.p_values for c in out},
        metrics,
        same_as_base=[c.cell.name for c in out if c.cell.contract == base],
    )
    out = [dataclasses.replace(c, stats=compared[c.cell.name]) for c in out]
    stats = SweepStats(
        passes=tuple(enc.records),
        models_loaded=enc.models_loaded,
        cache=enc.cache,
        encode_seconds=encode_seconds,
        score_seconds=score_seconds,
        contracts_scored=len(scored),
        result_cache=_result_cache_summary(scored.values(), store),
    )
    problems = list(dict.fromkeys([w for r in scored.values() for w in r.warnings] + enc.cache_problems))
    problems += store.problems if store is not None else []
    return SweepResult(
        base=base_result,
        cells=out,
        stats=stats,
        metrics=metrics,
        axes=tuple(axes),
        grid=grid,
        test=test,
        alpha=alpha,
        warnings=problems,
        store=store,
    )


def _result_cache_summary(results: Iterable[Result], store: ResultStore | None) -> dict[str, object] | None:
    """Contracts whose search and scores came from the result cache, and cells whose statistics did."""
    if store is None:
        return None
    status = [r.timing.get("result_cache", {}).get("status") for r in results]
    stats = store.summary().get("cell-stats", {"hits": 0, "misses": 0})
    return {
        "contracts": {"hits": status.count("hit"), "misses": status.count("miss")},
        "statistics": stats,
    }


def _role_timing(
    records: Sequence[PassRecord], passes: Sequence[ForwardPass], key: tuple[str, ...]
) -> dict[str, object]:
    for fp, rec in zip(passes, records, strict=True):
        if fp.key == key:
            return {
                "texts": rec.texts,
                "texts_encoded": rec.texts_encoded,
                "tokens": rec.tokens_encoded,
                "seconds": round(rec.seconds, 4),
            }
    return {}
