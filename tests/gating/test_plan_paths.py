"""Paths in a spec file are relative to the spec file (not to where pytest runs), qrels included."""

from __future__ import annotations

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.base.specfile import read_toml
from evalsuite.gating.plan import build_plan


def test_qrels_in_a_spec_file_resolve_against_the_spec_file(tmp_path):
    spec_dir, cwd = tmp_path / "spec", tmp_path / "elsewhere"
    plan = build_plan(
        file_settings={
            "qrels": "top.tsv",
            "datasets": [{"path": "data", "qrels": "q/dev.tsv"}, {"path": "other", "name": "o"}],
        },
        file_path=spec_dir / "evalsuite.toml",
        run_flags={},
        session_flags={},
        cwd=cwd,
    )
    assert [d.spec.qrels for d in plan.datasets] == [str(spec_dir / "q" / "dev.tsv"), str(spec_dir / "top.tsv")]
    assert plan.datasets[0].spec.dataset == str(spec_dir / "data")


def test_qrels_must_be_a_path_string(tmp_path):
    with pytest.raises(SpecError, match=r"datasets\[0\]: qrels must be a string, got a number \(3\)"):
        build_plan(
            file_settings={"datasets": [{"path": "data", "qrels": 3}]},
            file_path=tmp_path / "evalsuite.toml",
            run_flags={},
            session_flags={},
            cwd=tmp_path,
        )


def test_unreadable_spec_files_are_spec_errors(tmp_path):
    (tmp_path / "bad.toml").write_bytes(b'model = "\xff"\n')
    with pytest.raises(SpecError, match=r"bad\.toml: not UTF-8 text \(byte 9\)"):
        read_toml(tmp_path / "bad.toml")
    with pytest.raises(SpecError, match=r"cannot be read"):
        read_toml(tmp_path)  # a directory
