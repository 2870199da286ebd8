"""`evalsuite/rerank/` sits below the canary and late interaction: it imports neither (the reranker canary's
checks are canary declarations, `late` registers its own command). Read from the source with `ast`, every
import (module-level or inside a function, relative or absolute) resolved to its absolute module."""

from __future__ import annotations

import ast
from pathlib import Path

import evalsuite

PACKAGE = Path(evalsuite.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, absolute (``from ..canary import x`` in evalsuite/rerank/a.py is
    ``evalsuite.canary``)."""
    package = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)[:-1]  # a module's, or __init__'s own
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names}
    return found


def test_the_resolver_sees_relative_imports_inside_functions():
    assert "evalsuite.rerank.twostage" in imported_modules(PACKAGE / "canary" / "checks" / "rerank_agreement.py")
    assert "evalsuite.canary.checks" in imported_modules(PACKAGE / "canary" / "runner.py")


def test_rerank_imports_neither_the_canary_nor_late():
    offending = {
        str(path.relative_to(PACKAGE)): sorted(
            m for m in imported_modules(path) if m.startswith(("evalsuite.canary", "evalsuite.late"))
        )
        for path in sorted((PACKAGE / "rerank").rglob("*.py"))
    }
    assert {p: m for p, m in offending.items() if m} == {}
    assert not (PACKAGE / "rerank" / "canary").exists()  # no second canary beside the family
