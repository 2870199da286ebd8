"""Baseline files: aggregate and per-query metrics plus the manifest, committed by the user; with a reranker,
the reranked stage's too (``reranked``: its reranker contract, depth, aggregate and per-query metrics)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ContractError
from ..base.io import atomic_write_json
from ..contract import Contract
from ..run.result import Result
from .gates import Scores
from .stages import RerankedStage

SCHEMA_VERSION = 1  # a baseline file's own version (results.json has its own, `result.SCHEMA_VERSION`)

REVISION_FIELDS = ("model", "model_revision", "tokenizer_revision")


@dataclass(frozen=True)
class Baseline:
    path: Path
    contract: Contract
    dataset_sha256: str
    manifest: dict[str, object]
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    reranked: RerankedStage | None = None  # None: written without a reranker

    def scores(self) -> Scores:
        return Scores("baseline", self.metrics, self.per_query)


def write_baseline(result: Result, path: str | Path, reranked: RerankedStage | None = None) -> Path:
    run = {k: v for k, v in result.to_dict().items() if k != "schema_version"}
    data = {"schema_version": SCHEMA_VERSION, "kind": "evalsuite-baseline", **run}
    data.pop("timing", None)
    if reranked is not None:
        data["reranked"] = reranked.to_dict()
    return atomic_write_json(path, data)


def load_baseline(path: str | Path) -> Baseline:
    p = Path(path)
    if not p.is_file():
        raise ContractError(f"{p}: baseline file not found; create it with --update-baseline")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ContractError(
            f"{p}:{exc.lineno}: baseline is not valid JSON ({exc.msg}); regenerate it with --update-baseline"
        ) from None
    except UnicodeDecodeError as exc:
        raise ContractError(
            f"{p}: baseline is not UTF-8 JSON (byte {exc.start}); regenerate it with --update-baseline"
        ) from None
    except OSError as exc:
        raise ContractError(f"{p}: baseline cannot be read ({exc.strerror or exc})") from None
    try:
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ContractError(
                f"{p}: baseline schema_version {data.get('schema_version')!r}, expected "
                f"{SCHEMA_VERSION}; regenerate it with --update-baseline"
            )
        manifest = data["manifest"]
        return Baseline(
            path=p,
            contract=Contract.from_dict(manifest["contract"], source=str(p)),
            dataset_sha256=data["dataset"]["sha256"],
            manifest=manifest,
            metrics={k: float(v) for k, v in data["metrics"].items()},
            per_query={m: {q: float(s) for q, s in v.items()} for m, v in data["per_query"].items()},
            reranked=RerankedStage.from_dict(data["reranked"]) if "reranked" in data else None,
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ContractError(f"{p}: baseline lacks {exc}; regenerate it with --update-baseline") from None


def comparability(
    expected: Contract,
    expected_sha: str,
    found: Contract,
    found_sha: str,
    *,
    ignore: tuple[str, ...] = (),
    labels: tuple[str, str] = ("baseline", "candidate"),
) -> list[str]:
    """Differences that make two results incomparable, each as a readable line."""
    out = [f"{k}: {labels[0]} {a!r}, {labels[1]} {b!r}" for k, (a, b) in expected.diff(found, ignore=ignore).items()]
    if expected_sha != found_sha:
        out.append(f"dataset sha256: {labels[0]} {expected_sha[:16]}…, {labels[1]} {found_sha[:16]}…")
    return out
