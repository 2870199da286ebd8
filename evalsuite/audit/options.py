"""`evalsuite audit`'s own options, declared once (the CLI reads them; the settings' defaults show in the help)."""

from __future__ import annotations

import dataclasses

from ..run.options import CLIENT_OPTIONS, RETRIEVAL_OPTIONS, RUN_OPTIONS, Option, int_at_least, prefixed
from .settings import AuditSettings

_DEFAULTS = {f.name: f.default for f in dataclasses.fields(AuditSettings)}


def _setting(flag: str, help: str, kwargs: dict[str, object], field: str) -> Option:
    return Option(flag, help, {**kwargs, "dest_name": field}).with_default(_DEFAULTS[field])


def _share(text: str) -> float:
    return float(text)


INDEX_OPTIONS: tuple[Option, ...] = (
    Option(
        "--index",
        "the audited index: faiss:PATH, postgresql://USER@HOST:PORT/DB?table=T&id=COL&vector=COL, lancedb:DIR?table=T",
        {"metavar": "URI", "dest_name": "index_uri"},
    ),
    Option(
        "--ids", "chunk ids of a FAISS index: one per line (line i = FAISS id i), JSONL or Parquet", {"metavar": "PATH"}
    ),
    Option(
        "--manifest",
        "the index's manifest.json (default: manifest.json beside a FAISS file, if any)",
        {"metavar": "PATH"},
    ),
    Option(
        "--password-env", "environment variable holding the database password (default: PGPASSWORD)", {"metavar": "VAR"}
    ),
    Option("--baseline-index", "cutover: the index in production now, audited too and compared", {"metavar": "URI"}),
    Option("--baseline-ids", "chunk ids of the baseline FAISS index", {"metavar": "PATH"}),
    Option("--baseline-manifest", "the baseline index's manifest.json", {"metavar": "PATH"}),
    Option(
        "--endpoint",
        "encode the labelled queries through this served endpoint (the production query path)",
        {"metavar": "URL"},
    ),
    Option("--baseline-endpoint", "cutover: the endpoint the baseline index is served with", {"metavar": "URL"}),
    Option(
        "--no-mmap",
        "read a FAISS file into memory instead of memory-mapping it",
        {"action": "store_const", "const": False, "dest_name": "mmap"},
    ),
)
SETTING_OPTIONS: tuple[Option, ...] = (
    _setting(
        "--audit-detect",
        "fidelity: the share of bad vectors the sample must catch with probability 0.99",
        {"type": _share, "metavar": "SHARE"},
        "detect",
    ),
    _setting(
        "--audit-all",
        "fidelity over every stored vector (no sampling)",
        {"action": "store_const", "const": True},
        "audit_all",
    ),
    _setting("--audit-seed", "the fidelity sample's seed", {"type": int, "metavar": "N"}, "seed"),
    _setting(
        "--audit-min-cosine",
        "fidelity: the least cosine of a stored vector with its reference",
        {"type": float, "metavar": "X"},
        "min_cosine",
    ),
    _setting(
        "--audit-norm-tol",
        "norms: |norm - 1| above this is off 1 when the contract normalizes",
        {"type": float, "metavar": "X"},
        "norm_tol",
    ),
    _setting(
        "--audit-max-delta",
        "retrieval: the non-inferiority margin against the reference",
        {"type": float, "metavar": "X"},
        "max_delta",
    ),
    _setting(
        "--audit-min-ann-recall",
        "the index's recall@k against its own exact search",
        {"type": float, "metavar": "X"},
        "min_ann_recall",
    ),
    _setting(
        "--audit-k",
        "k of ANN recall@k and of 'no relevant chunk retrieved'",
        {"type": int_at_least(1), "metavar": "K"},
        "k",
    ),
    _setting(
        "--audit-window",
        "rows either side of an infidel row searched for its vector's chunk",
        {"type": int_at_least(1), "metavar": "N"},
        "window",
    ),
    _setting(
        "--audit-block-rows", "stored vectors read at once", {"type": int_at_least(1), "metavar": "N"}, "scan_rows"
    ),
    Option(
        "--audit-gate",
        "retrieval and cutover gate in the release gates' syntax (e.g. ndcg@10:non_inferior=0.02, "
        "recall@10:max_drop=0.01, mrr@10>=0.5), repeatable (default: METRIC:non_inferior=--audit-max-delta for each)",
        {"action": "append", "metavar": "EXPR", "dest_name": "gates"},
    ),
    Option(
        "--suspect-model",
        "a model directory (e.g. the previous revision) a stale vector may have been made with; repeatable",
        {"action": "append", "metavar": "DIR", "dest_name": "suspect_models"},
    ),
)
# the run options that make the reference (model, contract, dataset), without the run's own --index (an index kind)
AUDIT_RUN_OPTIONS: tuple[Option, ...] = tuple(
    o for o in RUN_OPTIONS if o.flag != "--index" and o not in RETRIEVAL_OPTIONS
)  # the audit reads an index, not a ranking: no retriever applies
# how to call --endpoint / --baseline-endpoint (an API key from the environment, the served name, ...): the endpoint
# client's own options, as `run --endpoint` and the canary take them
AUDIT_CLIENT_OPTIONS: tuple[Option, ...] = tuple(
    prefixed(o, "with --endpoint / --baseline-endpoint: ") for o in CLIENT_OPTIONS
)
