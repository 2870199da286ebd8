"""Markdown building blocks shared by the run, sweep, gate and canary reports."""

from __future__ import annotations

import json
from collections.abc import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.4f}"
        return str(v).replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def contract_rows(contract: dict[str, object]) -> list[tuple[str, str]]:
    """Each set field; a text in JSON quotes in a code span, so an empty or space-ended prefix shows (`""`)."""
    return [
        (k, f"`{json.dumps(v, ensure_ascii=False)}`" if isinstance(v, str) else str(v))
        for k, v in contract.items()
        if v is not None
    ]
