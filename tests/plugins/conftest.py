"""What the plug-in tests share: a distribution installed the way an installer leaves it (its files and a
``.dist-info`` with entry points) on ``sys.path``, the entry points read again before and after each test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalsuite.base import plugins


def demo_plugin() -> tuple[str, str]:
    """The demo plug-in of docs/ARCHITECTURE.md as the page shows it: its module's whole source and its
    pyproject.toml entry-point tables."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```(?:python|toml)\n(.*?)^```", doc, re.M | re.S)
    source = next(b for b in blocks if b.startswith("# evalsuite_demo_plugin/__init__.py"))
    return source, next(b for b in blocks if b.startswith("# pyproject.toml"))


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


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Put a site directory on ``sys.path`` and read the entry points again (and again after the test)."""

    def add(site: Path) -> None:
        monkeypatch.syspath_prepend(str(site))
        plugins.forget()

    yield add
    plugins.forget()
    monkeypatch.delitem(sys.modules, "evalsuite_demo_plugin", raising=False)
