"""A sweep as JSON (sweep.json): every cell's contract, metrics, deltas with CIs and storage."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ...run.result import SCHEMA_VERSION
from ..registry import declaration
from .slices import base_slices, cell_slices

if TYPE_CHECKING:
    from ...contract import Contract
    from ..results import CellResult, SweepResult

BYTES_PER_FLOAT32 = 4
ONE_MILLION = 1_000_000


def storage(contract: Contract) -> dict[str, int | str]:
    """Float32 storage of one vector and of a flat index over one million vectors."""
    per_vector = contract.dim * BYTES_PER_FLOAT32
    return {
        "dim": contract.dim,
        "dtype_stored": "float32",
        "bytes_per_vector": per_vector,
        "index_bytes_1m_vectors": per_vector * ONE_MILLION,
        "index_size_1m_vectors": _human(per_vector * ONE_MILLION),
    }


def index_bytes_per_document(
    contract: Contract, retrieval: Mapping[str, object] | None, n_documents: int
) -> float | None:
    """What the index of the contract's retriever holds per document, as docs/hybrid.md counts it: for each
    retriever the run uses (a hybrid's components, summed) the ``index_bytes_per_document`` its ``retrieval``
    entry records (``bm25``, ``sparse``, ``multivector``); ``dense``, which records none, one vector per document
    at its index's bytes per vector (float32 for flat: dim x 4). None where an entry does not say."""
    from ...retrieval.index.footprint import footprint
    from ...retrieval.index.spec import parse_index, resolve
    from ...retrieval.retrievers import parse_retrieval

    total = 0.0
    for name in parse_retrieval(contract.retrieval).components:
        part = (retrieval or {}).get(name)
        if isinstance(part, Mapping) and isinstance(part.get("index_bytes_per_document"), int | float):
            total += float(part["index_bytes_per_document"])
        elif name == "dense":
            resolved, _ = resolve(parse_index(contract.index), max(1, n_documents), contract.dim)
            total += float(footprint(resolved, contract.dim).bytes_per_vector)
        else:
            return None
    return total


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1000
    return f"{n} B"


def _r(x: float) -> float:
    return round(float(x), 6)


def shows_storage(c: CellResult) -> bool:
    """Whether ``c`` varies an axis whose declaration asks for storage figures (``dim``)."""
    decls = (declaration(a) for a, _ in c.cell.varies)
    return any(d is not None and d.shows_storage for d in decls)


def _cell_dict(result: SweepResult, c: CellResult) -> dict[str, object]:
    r = c.result
    out: dict[str, object] = {
        "name": c.cell.name,
        "axis": c.cell.axis,
        "value": c.cell.value,
        "varies": dict(c.cell.varies),
        "same_as_base": c.cell.same_as_base,
        "contract": r.contract.to_dict(),
        "contract_fingerprint": r.contract.fingerprint(),
        "metrics": {m: _r(v) for m, v in r.metrics.items()},
        "delta": {m: _r(v) for m, v in c.delta.items()},
        "p_values": {m: _r(v) for m, v in c.p_values.items()},
        "significant": c.significant(result.alpha),
        "uncertainty": {m: {k: _r(v) for k, v in st.to_dict().items()} for m, st in c.stats.items()},
    }
    if shows_storage(c):
        out["storage"] = storage(r.contract)
    if c.index is not None:
        out["index"] = c.index.to_dict()
    if "retrieval" in r.manifest:  # a retriever other than dense: its settings, index size per document, components
        out["retrieval"] = r.manifest["retrieval"]
    if "result_cache" in r.timing:
        out["result_cache"] = r.timing["result_cache"]
    slices = cell_slices(result, c)
    if slices is not None:
        out["slices"] = slices
    return out


def sweep_to_dict(result: SweepResult) -> dict[str, object]:
    base = result.base
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sweep",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": "grid" if result.grid else "one-at-a-time",
        "axes": [{"name": a.name, "values": list(a.labels)} for a in result.axes],
        "metrics": list(result.metrics),
        "significance": {
            "test": f"ranx paired {result.test} test vs base, per query",
            "alpha": result.alpha,
            "correction": f"{result.correction} across every cell and metric (q-values)",
            "marks": f"significant: q-value < {result.alpha}",
            "intervals": "95% paired bootstrap CI of the delta over queries (10,000 resamples, seed 0); "
            "sign-flip p: paired randomization test; MDE: one-sided 5%, power 80%",
        },
        "dataset": base.dataset.identity.to_dict(),
        "model": base.manifest.get("model"),
        "libraries": base.manifest.get("libraries"),
        "device": base.manifest.get("device"),
        "base": {
            "name": "base",
            "contract": base.contract.to_dict(),
            "contract_fingerprint": base.contract.fingerprint(),
            "metrics": {m: _r(v) for m, v in base.metrics.items()},
            "storage": storage(base.contract),
            **({"slices": base_slices(result)} if base.slices is not None else {}),
        },
        "cells": [_cell_dict(result, c) for c in result.cells],
        **({"choice": result.choice.to_dict()} if result.choice is not None else {}),
        "execution": result.stats.to_dict(),
        "warnings": list(result.warnings),
    }
