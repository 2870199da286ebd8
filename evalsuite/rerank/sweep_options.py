"""Registers `evalsuite rerank-sweep` (filled in by evalsuite.rerank.sweep)."""

from __future__ import annotations

from typing import Any


def register_sweep(subparsers: Any) -> None:
    return None
