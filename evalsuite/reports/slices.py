"""How slices read: the terminal table of a run, its Markdown section, and the slices that moved most."""

from __future__ import annotations

from collections.abc import Sequence

from ..slicing import MIN_QUERIES, SliceRow
from ..slicing.compare import SliceMove
from .markdown import table

DOCLEN_NOTE = (
    "qlen: tokens of the rendered query; doclen: tokens of the query's longest relevant document "
    "(length buckets partition the queries); truncated: longer than the contract's max_length; "
    "a slice's metric is the mean of its queries' per-query values"
)


def _signed(x: float) -> str:
    return f"{round(x, 4) + 0.0:+.4f}"


def _aligned(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    return ["  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() for cells in [headers, *rows]]


def _cells(row: SliceRow, metrics: Sequence[str]) -> list[str]:
    few = "*" if row.n_queries < MIN_QUERIES else ""
    return [
        row.slice,
        f"{row.n_queries}{few}",
        *("-" if m not in row.metrics else f"{row.metrics[m]:.4f}" for m in metrics),
    ]


def slice_lines(rows: Sequence[SliceRow], metrics: Sequence[str]) -> list[str]:
    """The terminal table of a run's slices (nothing when it has none)."""
    if not rows:
        return []
    lines = ["slices:"] + [
        "  " + line for line in _aligned(["slice", "queries", *metrics], [_cells(r, metrics) for r in rows])
    ]
    if any(r.n_queries < MIN_QUERIES for r in rows):
        lines.append(f"  * fewer than {MIN_QUERIES} queries: a gate on this slice is inconclusive")
    return lines


def slice_markdown(rows: Sequence[SliceRow], metrics: Sequence[str]) -> str:
    if not rows:
        return ""
    return (
        "\n## Slices\n\n"
        + table(["slice", "queries", *metrics], [_cells(r, metrics) for r in rows])
        + f"\n{DOCLEN_NOTE}; * fewer than {MIN_QUERIES} queries.\n"
    )


def moved_cells(m: SliceMove) -> list[str]:
    c = m.comparison
    return [
        m.slice,
        m.metric,
        str(m.n_queries),
        f"{m.reference:.4f}",
        f"{m.candidate:.4f}",
        _signed(c.ci.delta),
        f"{_signed(c.ci.low)} .. {_signed(c.ci.high)}",
        f"{c.p_value:.3g}",
    ]


MOVED_HEADERS = ("slice", "metric", "queries", "{side}", "candidate", "delta", "95% CI", "sign-flip p")


def moved_lines(moves: Sequence[SliceMove], side: str, n: int = 5) -> list[str]:
    """The ``n`` slices that moved most (largest |delta|), with their CIs, for the terminal."""
    moves = [m for m in moves if m.comparison.ci.delta != 0]
    if not moves:
        return []
    headers = [h.format(side=side) for h in MOVED_HEADERS]
    return ["slices that moved most:"] + [
        "  " + line for line in _aligned(headers, [moved_cells(m) for m in moves[:n]])
    ]


def moved_markdown(moves: Sequence[SliceMove], side: str, n: int = 10) -> str:
    moves = [m for m in moves if m.comparison.ci.delta != 0]
    if not moves:
        return ""
    headers = [h.format(side=side) for h in MOVED_HEADERS]
    return (
        "\n## Slices that moved most\n\n"
        + table(headers, [moved_cells(m) for m in moves[:n]])
        + "\nDelta with its paired bootstrap 95% CI over the slice's queries; sign-flip p is a paired "
        "randomization test; neither is corrected for the number of slices.\n"
    )
