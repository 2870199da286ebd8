"""Sweep test fixtures: specs on the tiny random BERT with a per-test embedding cache."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalsuite.run.spec import RunSpec


@pytest.fixture
def tiny_spec(tiny_model_dir: Path, minibeir_dir: Path, tmp_path: Path) -> Callable[..., RunSpec]:
    """RunSpec factory on the tiny model and the fixture dataset; the cache lives in tmp_path."""

    def make(**changes: Any) -> RunSpec:
        base = RunSpec(
            model=str(tiny_model_dir),
            dataset=str(minibeir_dir),
            device="cpu",
            cache_dir=str(tmp_path / "cache"),
            metrics=("ndcg@10", "recall@100"),
        )
        return base.replace(**changes)

    return make
