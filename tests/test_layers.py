"""The layers of docs/ARCHITECTURE.md, enforced: no module under evalsuite/ imports a group on its own layer or
above (lazy, function-level and type-only imports included), and every package and top-level module is in
the table. The table is read from the document, so the document and the check cannot drift apart."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "evalsuite"
DOC = REPO / "docs" / "ARCHITECTURE.md"
CLI = "*.cli"  # every cli.py (e.g. canary/reranker/cli.py; a *_cli.py too): the thin shells


@dataclass(frozen=True)
class Edge:
    module: str  # dotted, without the leading "evalsuite."
    line: int
    target: str
    source_group: str
    target_group: str
    source_layer: int
    target_layer: int

    def __str__(self) -> str:
        return (
            f"evalsuite/{self.module.replace('.', '/')}.py:{self.line}: {self.module} (group {self.source_group}, "
            f"layer {self.source_layer}) imports {self.target} (group {self.target_group}, layer {self.target_layer})"
        )


def read_layers(text: str) -> dict[str, int]:
    """{group: layer} from the table under '## Layers': rows ``| N | `a`, `b` | ... |``."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    layers: dict[str, int] = {}
    for row in re.finditer(r"^\|\s*(\d+)\s*\|([^|]*)\|", section, re.M):
        for group in re.findall(r"`([^`]+)`", row.group(2)):
            assert group not in layers, f"{DOC}: group {group} is in two rows"
            layers[group] = int(row.group(1))
    return layers


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def group_of(module: str, layers: dict[str, int]) -> str | None:
    """The row a module belongs to: ``*.cli`` for a package's cli module, else the longest listed dotted
    prefix."""
    if "." in module and module.split(".")[-1].endswith("cli") and CLI in layers:
        return CLI
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in layers:
            return ".".join(parts[:n])
    return None


def _exists(module: str) -> bool:
    base = PACKAGE.joinpath(*module.split(".")) if module else PACKAGE
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import of evalsuite in the file, anywhere in it; a name imported from a
    package that is itself a module counts as that module (``from . import preflight``)."""
    module = module_name(path)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    package = [p for p in package if p]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                stem = ".".join(["evalsuite", *base, *([node.module] if node.module else [])])
            else:
                stem = node.module or ""
            names = [f"{stem}.{a.name}" for a in node.names] + [stem]
        for name in names:
            if name != "evalsuite" and not name.startswith("evalsuite."):
                continue
            parts = name.split(".")[1:]
            while parts and not _exists(".".join(parts)):
                parts.pop()
            if parts:
                out.append((node.lineno, ".".join(parts)))
                if isinstance(node, ast.ImportFrom):
                    break  # the most specific module this import names
    return out


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def upward_edges(layers: dict[str, int]) -> list[Edge]:
    edges = []
    for path in modules():
        module = module_name(path)
        source = group_of(module, layers)
        if not module or source is None:
            continue
        for line, target in imported(path):
            group = group_of(target, layers)
            if group is None or group == source:
                continue
            if layers[group] >= layers[source]:
                edges.append(Edge(module, line, target, source, group, layers[source], layers[group]))
    return edges


LAYERS = read_layers(DOC.read_text(encoding="utf-8"))


def test_every_package_and_top_level_module_is_in_a_layer():
    tops = {module_name(p).split(".")[0] for p in modules()} - {""}
    missing = sorted(t for t in tops if group_of(t, LAYERS) is None)
    assert not missing, (
        f"evalsuite/{missing[0]} is in no layer: add it to one row of the Layers table in docs/ARCHITECTURE.md "
        f"(the lowest layer above everything it imports); unlisted: {', '.join(missing)}"
    )
    unmatched = [m for m in (module_name(p) for p in modules()) if m and group_of(m, LAYERS) is None]
    assert not unmatched, f"modules in no layer: {unmatched}"


def test_every_group_in_the_table_exists():
    """A row naming a package that is gone (moved or deleted) is stale."""
    stale = [g for g in LAYERS if g != CLI and not _exists(g)]
    assert not stale, f"docs/ARCHITECTURE.md Layers names {stale}, which are not under evalsuite/; remove them"


def test_no_import_runs_up_the_layers():
    edges = upward_edges(LAYERS)
    assert not edges, "imports running up the layers (docs/ARCHITECTURE.md, Layers):\n" + "\n".join(map(str, edges))


def test_the_check_sees_lazy_type_only_and_relative_imports(tmp_path, monkeypatch):
    """Bugs caught: only module-level imports read, TYPE_CHECKING blocks skipped, relative imports resolved
    against the wrong package, a same-layer import let through, a cli module not on the top layer."""
    fake = tmp_path / "evalsuite"
    (fake / "low").mkdir(parents=True)
    (fake / "high").mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "low" / "__init__.py").write_text("")
    (fake / "high" / "__init__.py").write_text("")
    (fake / "high" / "cli.py").write_text("from ..low import thing\n")
    (fake / "low" / "thing.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..high import x\n\n"
        "def f():\n    from evalsuite.high import y\n    from . import peer\n    from ..side import z\n"
    )
    (fake / "low" / "peer.py").write_text("")
    (fake / "high" / "x.py").write_text("")
    (fake / "high" / "y.py").write_text("")
    (fake / "side.py").write_text("z = 1\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    layers = {"low": 1, "side": 1, "high": 2, CLI: 3}
    found = {(e.module, e.line, e.target) for e in upward_edges(layers)}
    assert found == {("low.thing", 3, "high.x"), ("low.thing", 6, "high.y"), ("low.thing", 8, "side")}
    assert group_of("high.cli", layers) == CLI and group_of("low.peer", layers) == "low"
    assert group_of("other", layers) is None
    with pytest.raises(AssertionError, match="is in two rows"):
        read_layers("\n## Layers\n\n| 1 | `a` | x |\n| 2 | `a` | y |\n")


def import_cycles() -> list[list[str]]:
    """The circles in the module import graph (every import, lazy and type-only included): each strongly
    connected component of more than one module (Tarjan's algorithm)."""
    graph = {module_name(p): {t for _, t in imported(p)} for p in modules()}
    graph = {m: {t for t in targets if t in graph and t != m} for m, targets in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_circle_between_modules():
    """No module reaches itself through imports, however lazy: a circle (two modules that import each other,
    even for a type) says one of them does two jobs; split it or move the shared type down, or give the lower
    one a Protocol of what it needs (as gating/sweeps.py does for the session)."""
    cycles = import_cycles()
    assert not cycles, "import circles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_circle(tmp_path, monkeypatch):
    """The check above can fail: two modules that import each other are one circle."""
    pkg = tmp_path / "evalsuite"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import x\n")
    (pkg / "c.py").write_text("from .a import y\n")
    monkeypatch.setitem(globals(), "PACKAGE", pkg)
    assert import_cycles() == [["a", "b"]]


# A package's cli module that still reaches above its package's layer (the command shares the canary's options and
# context): known, each to be untangled; a new one fails.
CLI_REACHING_UP = {("load.cli", "canary"), ("verify.cli", "canary")}


def cli_edges_above_their_package(layers: dict[str, int]) -> set[tuple[str, str]]:
    """(cli module, group) for each group a package's cli module imports from a layer above its own package's."""
    out = set()
    for path in modules():
        module = module_name(path)
        package = module.split(".")[0]
        if group_of(module, layers) != CLI or package not in layers:
            continue
        for _, target in imported(path):
            group = group_of(target, layers)
            if group is not None and group != CLI and layers[group] > layers[package]:
                out.add((module, group))
    return out


def test_a_package_cli_imports_nothing_above_its_package():
    """`history/cli.py` reads the spec file through `base/specfile.py`, not `gating/plan.py`: a shell of a lower
    package must not pull in a higher one (bug caught: ``from ..gating.plan import find_spec_file`` again)."""
    found = cli_edges_above_their_package(LAYERS)
    assert found <= CLI_REACHING_UP, f"cli modules importing above their package: {sorted(found - CLI_REACHING_UP)}"
    assert ("history.cli", "gating") not in found


# where a gate kind's name may be spelled: its declaration (and the history record's reader, for a record written
# before records carried the pass line their kind draws: frozen, a kind declared since records its own line); load/ is
# skipped: its capacity gates are another grammar (load/gates.py, which says why), whose kinds share some names
KIND_NAME_ALLOWED = {"gating/kinds.py", "gating/history_kinds.py", "history/record.py"}


def test_gate_kind_behaviour_is_the_kinds_own():
    """No module branches on a gate kind's name (``== "trend"``, ``POINT_KINDS``): what a kind does on a slice, which
    releases it compares with and how it names them are methods of its declaration (`gating/gates.py`
    ``GateKind.on_slice``, `gating/history_kinds.py` ``HistoryKind``). Bug caught: a new branch on a name."""
    from evalsuite.gating.kinds import GATE_KINDS

    names = "|".join(re.escape(k.name) for k in GATE_KINDS)
    spelled = re.compile(rf"""["']({names})["']""")
    found = [
        f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}"
        for path in modules()
        if str(path.relative_to(PACKAGE)) not in KIND_NAME_ALLOWED and not path.is_relative_to(PACKAGE / "load")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if spelled.search(line)
    ]
    assert not found, "gate kind names spelled outside their declarations:\n" + "\n".join(found)


def _imports_of(package: str, group: str) -> list[str]:
    """``file:line: target`` for every import (lazy and type-only included) of ``group`` by a module of ``package``."""
    return [
        f"{path.relative_to(REPO)}:{line}: {target}"
        for path in modules()
        if module_name(path) == package or module_name(path).startswith(package + ".")
        for line, target in imported(path)
        if target == group or target.startswith(group + ".")
    ]


def test_the_audit_imports_no_canary():
    """The audit is a family of the check engine (`evalsuite/checks/`) beside the canary, not a guest in its house:
    it imports the engine, never the canary (bug caught: ``from ..canary.embedding.checks.repeat import
    DETECT_CONFIDENCE`` again, or the canary's judge instead of the engine's)."""
    assert LAYERS["checks"] < min(LAYERS["canary"], LAYERS["audit"])
    found = _imports_of("audit", "canary")
    assert not found, "the audit imports the canary:\n" + "\n".join(found)
    assert _imports_of("canary.runner", "checks")  # the finder sees an engine import where there is one


def module_line_bound(text: str) -> int:
    """The bound 'No module is over N lines' in docs/ARCHITECTURE.md's rules."""
    found = re.search(r"No module is over (\d+) lines", text)
    assert found, f"{DOC}: the rule 'No module is over N lines' is gone from 'Rules the layout keeps'"
    return int(found.group(1))


def modules_over(bound: int) -> list[str]:
    """``evalsuite/path.py: N lines`` for each module longer than ``bound``, longest first."""
    sizes = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in modules()}
    over = sorted((n, path) for path, n in sizes.items() if n > bound)
    return [f"{path.relative_to(REPO)}: {n} lines" for n, path in reversed(over)]


def test_no_module_is_over_the_line_bound():
    bound = module_line_bound(DOC.read_text(encoding="utf-8"))
    assert bound == 450
    over = modules_over(bound)
    assert not over, f"modules over {bound} lines (docs/ARCHITECTURE.md, Rules the layout keeps):\n" + "\n".join(over)
    assert modules_over(bound // 10)  # the finder sees a long module where there is one
