"""The bundled dataset, the version line and the optional extras, as an installed package sees them."""

from __future__ import annotations

import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import evalsuite
from evalsuite.base import about, resources
from evalsuite.base.errors import MissingExtra, SpecError
from evalsuite.base.extras import EXTRAS, require
from evalsuite.cli import main
from evalsuite.gating.plan import build_plan

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(evalsuite.__file__).resolve().parent


def test_the_bundled_dataset_is_inside_the_package_and_is_the_fixtures_source():
    found = resources.bundled_dataset_dir()
    assert found == PACKAGE / "bundled" / "minibeir"  # not beside a checkout, not in the cwd
    assert found.resolve() == (REPO / "fixtures" / "minibeir").resolve()  # in a clone: one copy, the link


def test_bundled_is_found_from_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resources.dataset_dir(None) == resources.dataset_dir("bundled") == resources.bundled_dataset_dir()
    assert resources.dataset_dir("data") == Path("data")


def test_a_package_without_its_dataset_says_reinstall(tmp_path, monkeypatch):
    monkeypatch.setattr(resources.resources, "files", lambda _pkg: tmp_path)  # fault: data files not installed
    with pytest.raises(SpecError, match=r"bundled dataset is missing .*pip install --force-reinstall"):
        resources.bundled_dataset_dir()


@pytest.mark.parametrize(
    "settings, flags",
    [
        ({}, {}),  # no dataset at all
        ({"datasets": [{"name": "minibeir", "path": "bundled", "baseline": "b.json"}]}, {}),
        ({"dataset": "bundled"}, {}),
        ({}, {"dataset": "bundled"}),
    ],
)
def test_spec_files_and_flags_name_the_bundled_dataset_not_a_path_beside_them(tmp_path, settings, flags):
    plan = build_plan(
        file_settings=settings,
        file_path=tmp_path / "spec" / "evalsuite.toml",
        run_flags=flags,
        session_flags={},
        cwd=tmp_path / "cwd",
    )
    (ds,) = plan.datasets
    assert ds.spec.dataset == str(resources.bundled_dataset_dir())
    assert ds.name == "minibeir"


def test_version_comes_from_the_installed_metadata(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == (
        f"evalsuite {metadata.version('evalsuite')} from {PACKAGE} "
        f"(python {sys.version_info.major}.{sys.version_info.minor})"
    )


def test_version_in_a_source_tree_that_was_never_installed(monkeypatch):
    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(about.metadata, "version", not_installed)
    line = about.version_line()
    assert line.startswith(f"evalsuite {evalsuite.__version__} from {PACKAGE} (source tree, not installed")
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert declared["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "evalsuite.__version__"}


def test_every_extra_named_in_a_message_is_declared():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS.values()) <= set(declared)
    require("ray", "--executor ray")  # installed here (the test extra): no error


def test_a_missing_ray_extra_is_a_usage_error_naming_the_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # fault: ray not installed
    with pytest.raises(MissingExtra, match=r"pip install 'evalsuite\[ray\]'"):
        require("ray", "--executor ray")
    out = tmp_path / "out"
    assert main(["run", "--executor", "ray", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "evalsuite: error: --executor ray needs ray, which is not installed: "
        "pip install 'evalsuite[ray]' (or drop --executor ray)"
    )
    assert not out.exists()  # refused before anything was loaded or written
