"""Plug-ins for real: the demo plug-in of docs/ARCHITECTURE.md (its whole source, read from the page) installed as a
distribution (a package and its ``.dist-info`` with entry points, on ``sys.path``): its store in `evalsuite audit
--help` and in an audit, its gate kind in a gated pytest session; a broken plug-in named by its entry point."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import evalsuite
from evalsuite.base import plugins
from evalsuite.base.errors import PluginError, SpecError
from evalsuite.cli import main
from evalsuite.model import directory_digest

DOC = (Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(?:python|toml)\n(.*?)^```", DOC, re.M | re.S)
SOURCE = next(b for b in BLOCKS if b.startswith("# evalsuite_demo_plugin/__init__.py"))
PYPROJECT = next(b for b in BLOCKS if b.startswith("# pyproject.toml"))


def install(site: Path, name: str, entry_points: str, files: dict[str, str] | None = None) -> Path:
    """A distribution as an installer leaves it: its files and ``NAME-0.1.dist-info`` (METADATA, entry_points.txt)."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    for rel, text in (files or {}).items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text, encoding="utf-8")
    return site


def entry_points_txt(pyproject: str) -> str:
    """pyproject.toml's ``[project.entry-points."G"]`` tables as entry_points.txt's ``[G]`` sections (values
    unquoted)."""
    sections = re.sub(r'^\[project\.entry-points\."([^"]+)"\]', r"[\1]", pyproject, flags=re.M)
    return re.sub(r'^(\S+) = "([^"]*)"$', r"\1 = \2", sections, flags=re.M)


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Put a site directory on ``sys.path`` and read the entry points again (and again after the test)."""

    def add(site: Path) -> None:
        monkeypatch.syspath_prepend(str(site))
        plugins.forget()

    yield add
    plugins.forget()
    monkeypatch.delitem(sys.modules, "evalsuite_demo_plugin", raising=False)


@pytest.fixture
def demo(tmp_path: Path, on_path) -> Path:  # type: ignore[no-untyped-def]
    site = install(
        tmp_path / "site",
        "evalsuite-demo-plugin",
        entry_points_txt(PYPROJECT),
        {"evalsuite_demo_plugin/__init__.py": SOURCE},
    )
    on_path(site)
    return site


def _npy_index(root: Path, vectors: np.ndarray, ids: list[str]) -> Path:
    root.mkdir(parents=True)
    np.save(root / "vectors.npy", np.ascontiguousarray(vectors, dtype=np.float32))
    (root / "ids.txt").write_text("\n".join(ids) + "\n", encoding="utf-8")
    return root


def test_the_plugin_store_is_in_the_help_and_audits_an_index(demo, tiny_model_dir, small_beir, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["audit", "--help"])
    assert exit_.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "npy:... (npy, a plug-in: DIR/vectors.npy and DIR/ids.txt)" in help_text
    run = evalsuite.evaluate(tiny_model_dir, small_beir, device="cpu", use_cache=False)
    vectors, ids = run.result.doc_vectors, list(run.result.dataset.doc_ids)
    assert vectors is not None
    good = _npy_index(tmp_path / "good", vectors, ids)
    argv = ["audit", "--model", str(tiny_model_dir), "--dataset", str(small_beir), "--device", "cpu", "--no-cache"]
    assert main([*argv, "--index", f"npy:{good}", "--out", str(tmp_path / "out")]) == 0, capsys.readouterr().out
    report = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert report["index"]["index"]["store"] == "npy" and report["passed"] is True
    assert {v["check"]: v["status"] for v in report["index"]["verdicts"]}["fidelity"] == "PASS"
    swapped = _npy_index(tmp_path / "swapped", vectors, [ids[1], ids[0], *ids[2:]])  # two ids zipped wrongly
    bad = evalsuite.audit(f"npy:{swapped}", tiny_model_dir, small_beir, device="cpu", use_cache=False)
    assert not bad.passed and next(v for v in bad.verdicts if v.check == "fidelity").status == "FAIL"


def test_a_gated_pytest_session_judges_the_plugin_gate_kind(
    demo, pytester, tiny_model_dir, small_beir, model_stack_loaded
):
    model = str(tiny_model_dir)
    result = pytester.runpytest(
        *("-p", "no:randomly", "-p", "no:cacheprovider", "--model", model, "--model-rev", directory_digest(model)),
        *("--dataset", str(small_beir), "--no-cache", "--device", "cpu"),
        *("--gate", "ndcg@10:at_least=0.0", "--gate", "ndcg@10:at_least=1.5"),
    )
    result.assert_outcomes(passed=3, failed=1)  # contract, integrity, at_least 0.0 / at_least 1.5
    out = result.stdout.str()
    assert "is below 1.5 (at_least)" in out and "gate[ndcg@10:at_least=1.5]" in out


def test_without_the_plugin_its_names_are_unknown() -> None:
    """The demo's names come from the installed distribution, nowhere else (the tests above could not pass)."""
    plugins.forget()
    from evalsuite.audit.stores import store_for
    from evalsuite.gating.kinds import parse_gate

    with pytest.raises(SpecError, match="unknown kind 'at_least'"):
        parse_gate("ndcg@10:at_least=0.3")

    with pytest.raises(SpecError, match="no store answers this URI"):
        store_for("npy:/x")


@pytest.mark.parametrize(
    ("group", "target", "says"),
    [
        ("evalsuite.stores", "evalsuite_no_such_module:STORE", r"cannot be loaded \(ModuleNotFoundError"),
        ("evalsuite.stores", "evalsuite.gating.kinds:DEFAULT_MAX_DROP", "names a float, not a StoreKind"),
        ("evalsuite.gate_kinds", "evalsuite.gating.kinds:Floor", "declares 'floor', a name a built-in already has"),
    ],
)
def test_a_broken_plugin_is_named_by_its_entry_point(tmp_path, on_path, capsys, group, target, says) -> None:
    on_path(install(tmp_path, "evalsuite-broken-plugin", f"[{group}]\nbroken = {target}\n"))
    named = rf"entry point broken = {re.escape(target)} \(group {group}, from evalsuite-broken-plugin 0.1\)"
    from evalsuite.audit.stores import store_kinds
    from evalsuite.gating.kinds import gate_kinds

    with pytest.raises(PluginError, match=f"{named}.*{says}"):
        (store_kinds if group == "evalsuite.stores" else gate_kinds)()
    if group == "evalsuite.stores":  # the help still prints, and says so
        with pytest.raises(SystemExit):
            main(["audit", "--help"])
        assert "a plug-in store failed to load: entry point broken" in " ".join(capsys.readouterr().out.split())
