"""`pytest --model-rev REV --index faiss:PATH --ids PATH`: one item per audit check, with JUnit properties."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from evalsuite.model import bundled_model_dir, directory_digest

from .conftest import BATCH, DOC_PREFIX, Ingest


def test_one_item_per_check_with_its_status_and_cause(ingest: Ingest, pytester: pytest.Pytester) -> None:
    v = ingest.vectors.copy()
    v[BATCH : 2 * BATCH] = np.roll(ingest.vectors[BATCH : 2 * BATCH], -1, axis=0)
    index, ids = ingest.write("items-shift", v)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(
        "-p", "no:randomly", "-p", "no:cacheprovider",
        "--model-rev", directory_digest(bundled_model_dir()),
        "--dataset", str(ingest.dataset), "--doc-prefix", DOC_PREFIX,
        "--index", f"faiss:{index}", "--ids", str(ids),
        f"--junitxml={junit}", "-k", "audit",
    )  # fmt: skip
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 2 and outcomes.get("passed") == 5 and outcomes.get("skipped") == 1, outcomes
    result.stdout.fnmatch_lines(["*audit?fidelity?*", "*ids shifted by +1 inside 1 run of 32 consecutive rows*"])
    props = {
        p.get("name"): p.get("value")
        for case in ET.parse(junit).getroot().iter("testcase")
        for p in case.iter("property")
    }
    assert props["audit:fidelity"] == "FAIL" and props["audit:ids"] == "PASS" and props["audit:manifest"] == "SKIP"
    assert props["audit:collisions"] == "PASS"  # rows rolled inside a batch: moved, no two equal
    assert props["audit:fidelity:cause1"].startswith("mapping fault: ids shifted by +1")


def test_a_run_index_kind_is_still_an_index_kind() -> None:
    from evalsuite.audit.items import lenient_index
    from evalsuite.retrieval.index.spec import canonical

    parse = lenient_index(canonical)
    assert parse("faiss:/x/y.faiss") == "faiss:/x/y.faiss"
    assert parse("hnsw") == canonical("hnsw")
