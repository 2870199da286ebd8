"""--update-baseline: the baseline is written once per session, and a failed write neither re-runs the
evaluation for the next item nor ends in a raw OSError (it used to do both: the write sat inside the
memoized computation, so a failure left nothing memoized and every item evaluated again)."""

from __future__ import annotations

import json
import stat

import pytest

import evalsuite.gating.session as session_module
from evalsuite.base.errors import SpecError
from evalsuite.gating.ledger import BaselineWritten
from evalsuite.gating.plan import build_plan
from evalsuite.gating.session import GateSession
from evalsuite.model import directory_digest


@pytest.fixture
def runs(monkeypatch):
    calls: list[str] = []
    real = session_module.run

    def counting(spec, prepared=None, encoder=None):
        calls.append(str(spec.dataset))
        return real(spec, prepared, encoder=encoder)

    monkeypatch.setattr(session_module, "run", counting)
    return calls


def _session(tiny_model_dir, small_beir, baseline, tmp_path):
    plan = build_plan(
        file_settings=None,
        file_path=None,
        cwd=tmp_path,
        run_flags={
            "model": str(tiny_model_dir),
            "model_rev": directory_digest(tiny_model_dir),
            "dataset": str(small_beir),
            "device": "cpu",
            "use_cache": False,
        },
        session_flags={"update_baseline": True, "baseline": str(baseline)},
    )
    session = GateSession(plan)
    session.prepare_all()
    return session


def test_failed_baseline_write_does_not_evaluate_again(tiny_model_dir, small_beir, tmp_path, runs):
    baseline = tmp_path / "baselines" / "b.json"
    session = _session(tiny_model_dir, small_beir, baseline, tmp_path)
    (tmp_path / "baselines").write_text("")  # the directory became a file after the session started
    for _ in range(3):  # three items ask for the result
        with pytest.raises(SpecError, match=r"--update-baseline: cannot write the baseline .*b\.json"):
            session.result("small")
    assert len(runs) == 1
    assert session.ledger.baselines_written() == []


def test_baseline_written_once_with_the_umask_mode(tiny_model_dir, small_beir, tmp_path, runs):
    import os

    baseline = tmp_path / "baselines" / "b.json"
    session = _session(tiny_model_dir, small_beir, baseline, tmp_path)
    old = os.umask(0o022)
    try:
        first = session.result("small")
        second = session.result("small")
    finally:
        os.umask(old)
    assert first is second and len(runs) == 1
    assert list(session.ledger.baselines_written()) == [BaselineWritten("small", baseline)]
    assert json.loads(baseline.read_text())["metrics"] == pytest.approx(first.metrics)
    assert stat.S_IMODE(baseline.stat().st_mode) == 0o644
