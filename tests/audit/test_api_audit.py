"""``evalsuite.audit(...)`` over the honest ingest's FAISS file and a shifted copy: the verdicts `evalsuite audit`
reports, quietly, and ``to_json()`` is the audit.json it writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import evalsuite
from evalsuite.base.errors import SpecError

from .conftest import ALL_PASS, BATCH, DOC_PREFIX, Ingest


def test_a_faithful_index_passes_and_a_shifted_one_is_a_mapping_fault(
    ingest: Ingest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index, ids = ingest.write("api-faithful", ingest.vectors)
    result = evalsuite.audit(f"faiss:{index}", dataset=ingest.dataset, ids=ids, doc_prefix=DOC_PREFIX, out=tmp_path)
    assert capsys.readouterr().out == ""
    assert result.passed and result.exit_status == 0
    assert {v.check: v.status for v in result.verdicts} == ALL_PASS
    assert result.to_json() == (tmp_path / "audit.json").read_text(encoding="utf-8")
    v = ingest.vectors.copy()
    v[BATCH : 2 * BATCH] = np.roll(ingest.vectors[BATCH : 2 * BATCH], -1, axis=0)
    shifted, ids = ingest.write("api-shift", v)
    bad = evalsuite.audit(f"faiss:{shifted}", dataset=ingest.dataset, ids=str(ids), doc_prefix=DOC_PREFIX)
    fidelity = next(x for x in bad.verdicts if x.check == "fidelity")
    assert not bad.passed and bad.exit_status == 1 and fidelity.status == "FAIL"
    written = next(x for x in bad.to_dict()["index"]["verdicts"] if x["check"] == "fidelity")
    assert written["details"]["diagnosis"]["causes"][0]["kind"] == "shift"


def test_usage_errors_are_raised_before_the_index_is_read(ingest: Ingest, tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="--baseline-endpoint and --baseline-ids need --baseline-index"):
        evalsuite.audit(f"faiss:{tmp_path / 'none.faiss'}", dataset=ingest.dataset, baseline_ids="ids.txt")
    with pytest.raises(SpecError, match=r"evalsuite.audit\(\): unknown setting\(s\) audit_k; known: .*\bk\b"):
        evalsuite.audit(f"faiss:{tmp_path / 'none.faiss'}", dataset=ingest.dataset, audit_k=5)
