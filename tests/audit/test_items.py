"""`pytest --model-rev REV --audit-index faiss:PATH --ids PATH`: one item per audit check, with JUnit properties; the
run's `--index` refuses a store URI, naming `--audit-index`."""

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
        "--audit-index", f"faiss:{index}", "--ids", str(ids),
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
    """Bug caught: the plugin's --index letting a store URI through again (it changed meaning: --audit-index)."""
    import argparse

    from evalsuite.audit.items import index_kind_only
    from evalsuite.retrieval.index.spec import canonical

    parse = index_kind_only(canonical)
    assert parse("hnsw") == canonical("hnsw")
    with pytest.raises(argparse.ArgumentTypeError, match=r"store URI: pass it as --audit-index faiss:/x/y\.faiss"):
        parse("faiss:/x/y.faiss")


def test_the_old_store_spelling_is_a_usage_error_naming_the_new_option(pytester: pytest.Pytester) -> None:
    """`pytest --index faiss:PATH` (the store URI's old spelling) exits with a usage error naming --audit-index,
    before any model is loaded; an --audit-index no store answers is one too."""
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "--index", "faiss:/nowhere/x.faiss")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "pass it as --audit-index faiss:/nowhere/x.faiss" in result.stderr.str()
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "--audit-index", "nosuch:/x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--audit-index 'nosuch:/x': no store answers this URI" in result.stderr.str()
