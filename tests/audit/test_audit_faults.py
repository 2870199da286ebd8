"""`evalsuite audit` over FAISS files from an honest ingest pipeline, and copies with one real ingest fault each:
a faithful index passes with every delta 0; each fault is named by its class with its share (and its ids)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalsuite.cli import main

from .conftest import DOC_PREFIX, Ingest


def audit(ingest: Ingest, name: str, index: Path, ids: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    code = main(
        [
            "audit",
            "--index",
            f"faiss:{index}",
            "--ids",
            str(ids),
            "--dataset",
            str(ingest.dataset),
            "--doc-prefix",
            DOC_PREFIX,
            "--out",
            str(out / name),
            *extra,
        ]
    )
    data = json.loads((out / name / "audit.json").read_text(encoding="utf-8"))
    return code, data, (out / name / "report.md").read_text(encoding="utf-8")


def verdicts(data: dict[str, Any], side: str = "index") -> dict[str, dict[str, Any]]:
    return {v["check"]: v for v in data[side]["verdicts"]}


def test_faithful_index_passes_with_every_delta_zero(
    ingest: Ingest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index, ids = ingest.write("faithful", ingest.vectors)
    code, data, report = audit(ingest, "faithful", index, ids, tmp_path)
    v = verdicts(data)
    assert code == 0, capsys.readouterr().out
    assert data["schema_version"] == 1 and data["passed"] is True
    assert {k: x["status"] for k, x in v.items()} == {
        "shape": "PASS",
        "ids": "PASS",
        "norms": "PASS",
        "fidelity": "PASS",
        "retrieval": "PASS",
        "ann_recall": "PASS",
        "manifest": "SKIP",
    }
    assert v["fidelity"]["details"]["sampled"] == len(ingest.ids)  # 1% at 0.99 needs 459 rows: every one of 160
    for m, row in v["retrieval"]["details"]["metrics"].items():
        assert row["delta"] == 0.0 and row["ci_low"] == 0.0 and row["ci_high"] == 0.0, m
    assert v["ann_recall"]["details"]["recall"] == 1.0
    assert report.startswith("# Index audit: PASS")
