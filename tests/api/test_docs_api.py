"""docs/api.md runs: its ```python blocks, in order, in one namespace, on the bundled model and dataset (the
session's reference cache keeps the vectors); a block that starts with ``# needs`` (a served endpoint) is
compiled only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S)


def test_the_page_has_runnable_blocks_and_links_from_the_readme() -> None:
    runnable = [b for b in BLOCKS if not b.startswith("# needs")]
    assert len(runnable) >= 4 and any("evalsuite.canary(" in b for b in BLOCKS)
    assert "(docs/api.md)" in (DOC.parents[1] / "README.md").read_text(encoding="utf-8")


@pytest.mark.integration
def test_every_block_runs(reference_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(reference_cache))
    monkeypatch.chdir(tmp_path)  # the front door writes nothing unless told where
    namespace: dict[str, object] = {"__name__": "docs_api"}
    for i, block in enumerate(BLOCKS):
        code = compile(block, f"{DOC}:block {i + 1}", "exec")
        if not block.startswith("# needs"):
            exec(code, namespace)  # the documentation's own example
    assert list(tmp_path.iterdir()) == []
