"""Registers `evalsuite rerank-canary`."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    return None
