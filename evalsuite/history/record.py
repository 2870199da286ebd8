"""One release on one dataset, as the history keeps it: a frozen :class:`HistoryRecord` and its JSON form.

A record holds what a later gate needs to compare a new release with this one, paired query by query:
the model's lineage (``model``: its declared ``model_name``, else its directory's or hub id's name), where this
release was read from (``source``: the model directory or hub id), the revision, the contract (its fingerprint, and the fields so a change can be named), the
dataset's sha256, every metric with its bootstrap CI, the per-query scores (compact: the query ids once,
one list of scores per metric), each gate's verdict, the time and the calling commit.

Reading checks every field and raises :class:`~evalsuite.base.errors.HistoryError` naming the file and what
to do; a record written by a newer evalsuite (a higher ``schema_version``) is refused, not guessed at.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..base.errors import HistoryError
from ..base.verdict import VERDICTS, Verdict, worst

SCHEMA_VERSION = 1
KIND = "evalsuite-history-record"
COMMIT_VARIABLES = ("GITHUB_SHA", "CI_COMMIT_SHA")  # GitHub Actions, GitLab CI; else `git rev-parse HEAD`
_DIGITS = 6  # per-query scores are rounded to this many decimals: exact for the metrics' rational values to 1e-6


@dataclass(frozen=True)
class MetricValue:
    """A metric's mean over queries with its two-sided 95% bootstrap interval."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class GateVerdict:
    """One gate's verdict on this release, with the delta and its CI where the gate paired two sides."""

    gate: str
    kind: str
    metric: str
    threshold: float
    verdict: Verdict
    reference: float | None = None
    delta: float | None = None
    low: float | None = None
    high: float | None = None
    against: str | None = None  # what the gate compared with: "baseline", "first release 1a2b…", ...
    # the lowest value of the metric that passed the gate on this release, as its kind draws it (GateKind.pass_line;
    # `evalsuite history` plots it dashed); None: the kind has no such line
    pass_line: float | None = None


@dataclass(frozen=True)
class HistoryRecord:
    model: str
    revision: str
    dataset: str
    dataset_sha256: str
    contract: Mapping[str, object]  # Contract.to_dict(): a change of any field other than the revisions is named
    contract_fingerprint: str
    metrics: Mapping[str, MetricValue]
    query_ids: tuple[str, ...]
    per_query: Mapping[str, tuple[float, ...]]  # metric -> one score per query id, in query_ids order
    gates: tuple[GateVerdict, ...] = ()
    recorded_at: str = ""  # ISO 8601 UTC of this run
    first_recorded_at: str = ""  # of the first run of this revision: a re-run keeps its place in the order
    commit: str | None = None
    commit_source: str | None = None  # GITHUB_SHA, CI_COMMIT_SHA or git
    source: str | None = None  # the model directory or hub id this release was evaluated from (None: not recorded)
    path: Path | None = field(default=None, compare=False)  # the file it was read from

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.model, self.revision, self.dataset)

    @property
    def verdict(self) -> Verdict | None:
        """The worst of its gates' verdicts; None when the session judged no gate (a baseline refresh, a run)."""
        return worst([g.verdict for g in self.gates])

    def scores(self, metric: str) -> dict[str, float]:
        """``{query id: score}`` of ``metric`` (a query the metric did not score, NaN on disk, is left out)."""
        return {q: s for q, s in zip(self.query_ids, self.per_query.get(metric, ()), strict=True) if s == s}

    def per_query_map(self) -> dict[str, dict[str, float]]:
        return {m: self.scores(m) for m in self.per_query}

    def to_dict(self) -> dict[str, object]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": KIND,
            "model": self.model,
            "source": self.source,
            "revision": self.revision,
            "dataset": self.dataset,
            "dataset_sha256": self.dataset_sha256,
            "contract_fingerprint": self.contract_fingerprint,
            "contract": dict(self.contract),
            "recorded_at": self.recorded_at,
            "first_recorded_at": self.first_recorded_at or self.recorded_at,
            "commit": self.commit,
            "commit_source": self.commit_source,
            "metrics": {m: {"value": v.value, "low": v.low, "high": v.high} for m, v in self.metrics.items()},
            "gates": [{k: getattr(g, k) for k in GateVerdict.__dataclass_fields__} for g in self.gates],
            "query_ids": list(self.query_ids),
            "per_query": {m: list(v) for m, v in self.per_query.items()},
        }

    def with_history_of(self, earlier: HistoryRecord) -> HistoryRecord:
        """This record replacing ``earlier`` (same key): it keeps the first time, and the gates' verdicts when this
        run judged none (a baseline refresh after the gated run of the same revision)."""
        return replace(
            self,
            first_recorded_at=earlier.first_recorded_at or earlier.recorded_at,
            gates=self.gates or earlier.gates,
        )


def now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def calling_commit(cwd: Path | None = None) -> tuple[str | None, str | None]:
    """The commit the CI job runs for: ``GITHUB_SHA``, ``CI_COMMIT_SHA``, else ``git rev-parse HEAD`` in
    ``cwd``; (None, None) outside a repository."""
    for name in COMMIT_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value:
            return value, name
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None, None
    sha = proc.stdout.strip()
    return (sha, "git") if proc.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", sha) else (None, None)


def metric_values(per_query: Mapping[str, Mapping[str, float]], metrics: Mapping[str, float]) -> dict[str, MetricValue]:
    """Each metric's value with the 95% bootstrap interval of its mean over queries (seeded, as every CI here)."""
    import numpy as np

    from ..scoring.stats import mean_bootstrap

    out = {}
    for m, value in metrics.items():
        scores = per_query.get(m, {})
        if not scores:
            out[m] = MetricValue(float(value), float(value), float(value))
            continue
        (ci,) = mean_bootstrap(np.array([scores[q] for q in sorted(scores)], dtype=np.float64))
        out[m] = MetricValue(float(value), float(ci.low), float(ci.high))
    return out


def compact(per_query: Mapping[str, Mapping[str, float]]) -> tuple[tuple[str, ...], dict[str, tuple[float, ...]]]:
    """The query ids once (sorted, every metric's queries) and one score list per metric (a query a metric did not
    score is NaN, written ``null``)."""
    qids = tuple(sorted(set().union(*(set(v) for v in per_query.values())) if per_query else ()))
    return qids, {
        m: tuple(round(float(v[q]), _DIGITS) if q in v else float("nan") for q in qids) for m, v in per_query.items()
    }


# -- reading ----------------------------------------------------------------------------------------
def _fail(path: Path, what: str) -> HistoryError:
    return HistoryError(
        f"{path}: {what}; the history record is unusable: delete the file (re-running the gated session of that "
        "revision records it again) or restore it from version control"
    )


def _get(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: Path) -> Any:
    if key not in data:
        raise _fail(path, f"field {key!r} is missing")
    value = data[key]
    if not isinstance(value, kind):
        raise _fail(path, f"field {key!r} is {type(value).__name__}, not the expected kind")
    return value


def _number(value: object, where: str, path: Path) -> float:
    if value is None:
        return float("nan")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(path, f"{where} is {value!r}, not a number")
    return float(value)


def _optional(value: object, where: str, path: Path) -> float | None:
    return None if value is None else _number(value, where, path)


def _recorded_before_pass_lines(kind: str, threshold: float, reference: float | None) -> float | None:
    """The pass line of a gate recorded before records carried it (``pass_line`` absent), for the built-in kinds
    of then, as they drew it; frozen: a kind declared since records its own line (``GateKind.pass_line``)."""
    if kind == "floor":
        return threshold
    if reference is None:
        return None
    if kind in ("max_drop", "max_drop_from_first", "max_drop_from_best"):
        return reference - threshold
    if kind == "max_rel_drop":
        return reference * (1 - threshold)
    return None


def record_from_dict(data: object, path: Path) -> HistoryRecord:
    """A record from its parsed JSON; raises HistoryError naming ``path`` and the field."""
    if not isinstance(data, dict):
        raise _fail(path, "not a JSON object")
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise HistoryError(
            f"{path}: history record schema_version {version} was written by a newer evalsuite (this one reads "
            f"{SCHEMA_VERSION}); upgrade evalsuite (pip install -U evalsuite) to read this history"
        )
    if version != SCHEMA_VERSION or data.get("kind") != KIND:
        raise _fail(path, f"not an evalsuite history record (schema_version {version!r}, kind {data.get('kind')!r})")
    qids = _get(data, "query_ids", list, path)
    if not all(isinstance(q, str) for q in qids):
        raise _fail(path, "query_ids holds a non-string id")
    per_query: dict[str, tuple[float, ...]] = {}
    for m, scores in _get(data, "per_query", dict, path).items():
        if not isinstance(scores, list) or len(scores) != len(qids):
            raise _fail(
                path,
                f"per_query[{m!r}] has {len(scores) if isinstance(scores, list) else '?'} scores for "
                f"{len(qids)} query ids",
            )
        per_query[m] = tuple(_number(s, f"per_query[{m!r}]", path) for s in scores)
    metrics = {}
    for m, v in _get(data, "metrics", dict, path).items():
        if not isinstance(v, dict):
            raise _fail(path, f"metrics[{m!r}] is not an object with value, low, high")
        metrics[m] = MetricValue(*(_number(v.get(k), f"metrics[{m!r}].{k}", path) for k in ("value", "low", "high")))
    gates = []
    for i, g in enumerate(_get(data, "gates", list, path)):
        if not isinstance(g, dict) or g.get("verdict") not in VERDICTS:
            raise _fail(path, f"gates[{i}] has no verdict among {', '.join(VERDICTS)}")
        try:
            ref, delta, low, high = (
                _optional(g.get(k), f"gates[{i}].{k}", path) for k in ("reference", "delta", "low", "high")
            )
            threshold = _number(g["threshold"], f"gates[{i}].threshold", path)
            line = (
                _optional(g["pass_line"], f"gates[{i}].pass_line", path)
                if "pass_line" in g
                else _recorded_before_pass_lines(str(g["kind"]), threshold, ref)
            )
            gates.append(
                GateVerdict(
                    str(g["gate"]),
                    str(g["kind"]),
                    str(g["metric"]),
                    threshold,
                    g["verdict"],
                    ref,
                    delta,
                    low,
                    high,
                    None if g.get("against") is None else str(g["against"]),
                    line,
                )
            )
        except KeyError as exc:
            raise _fail(path, f"gates[{i}] lacks {exc}") from None
    commit = data.get("commit")
    return HistoryRecord(
        model=_get(data, "model", str, path),
        revision=_get(data, "revision", str, path),
        dataset=_get(data, "dataset", str, path),
        dataset_sha256=_get(data, "dataset_sha256", str, path),
        contract=_get(data, "contract", dict, path),
        contract_fingerprint=_get(data, "contract_fingerprint", str, path),
        metrics=metrics,
        query_ids=tuple(qids),
        per_query=per_query,
        gates=tuple(gates),
        recorded_at=_get(data, "recorded_at", str, path),
        first_recorded_at=_get(data, "first_recorded_at", str, path),
        commit=commit if isinstance(commit, str) else None,
        commit_source=data.get("commit_source") if isinstance(data.get("commit_source"), str) else None,
        source=data.get("source") if isinstance(data.get("source"), str) else None,
        path=path,
    )


def read_record(path: Path) -> HistoryRecord:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(path, f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise HistoryError(
            f"{path}: cannot be read ({exc.strerror or exc}); check the history directory's permissions"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(path, f"not valid JSON at line {exc.lineno} ({exc.msg})") from None
    return record_from_dict(data, path)


def sorted_records(records: Sequence[HistoryRecord]) -> list[HistoryRecord]:
    """Releases in the order they were first recorded (a re-run keeps its place), then by revision."""
    return sorted(records, key=lambda r: (r.first_recorded_at or r.recorded_at, r.recorded_at, r.revision))
