"""``load.json``, ``report.md`` and ``report.html`` (throughput and p95 latency against concurrency)
for a load profile, and for a cutover (quality deltas, capacity gates, verdict) when there is one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.io import atomic_write_json, atomic_write_text
from ..reports import html as h
from ..reports.markdown import table
from .runner import Level, LoadProfile

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .cutover import Cutover

SCHEMA_VERSION = 1
LEVEL_HEADERS = (
    "target",
    "batch",
    "concurrency",
    "req/s",
    "inputs/s",
    "tokens/s",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "errors",
    "429s",
)
PLOT_METRICS = ("inputs_per_s", "p95_ms")


def level_row(lv: Level) -> tuple[object, ...]:
    f = lv.figures
    return (
        lv.target,
        lv.batch_size,
        lv.concurrency,
        _n(f.requests_per_s),
        _n(f.inputs_per_s),
        _n(f.tokens_per_s),
        _n(f.p50_ms),
        _n(f.p95_ms),
        _n(f.p99_ms),
        f.errors,
        f.throttled,
    )


def bucket_rows(profile: LoadProfile) -> list[tuple[object, ...]]:
    return [
        (
            lv.target,
            lv.batch_size,
            lv.concurrency,
            b,
            f.ok,
            _n(f.inputs_per_s),
            _n(f.p50_ms),
            _n(f.p95_ms),
            _n(f.p99_ms),
            f.errors + f.throttled,
        )
        for lv in profile.levels
        for b, f in lv.buckets.items()
    ]


BUCKET_HEADERS = (
    "target",
    "batch",
    "concurrency",
    "bucket (tokens)",
    "requests",
    "inputs/s",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "failed",
)


def _n(x: float) -> str:
    return f"{x:.1f}" if x == x else "-"


def local_ratio_rows(profile: LoadProfile, local: str = "local") -> list[tuple[object, ...]]:
    """What a server buys: each other target's inputs/s and p95 against the local reference's, per level."""
    if local not in profile.targets:
        return []
    rows: list[tuple[object, ...]] = []
    for lv in profile.levels:
        if lv.target == local:
            continue
        ref = profile.level(local, lv.batch_size, lv.concurrency).figures
        rows.append(
            (
                lv.target,
                lv.batch_size,
                lv.concurrency,
                _ratio(lv.figures.inputs_per_s, ref.inputs_per_s),
                _ratio(lv.figures.p95_ms, ref.p95_ms),
            )
        )
    return rows


RATIO_HEADERS = ("target", "batch", "concurrency", "inputs/s vs local", "p95 vs local")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if a == a and b == b and b > 0 else "-"


def to_dict(profile: LoadProfile, cutover: Cutover | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "profile": profile.to_dict()}
    if cutover is not None:
        out["cutover"] = cutover.to_dict()
    return out


def _workload_rows(profile: LoadProfile) -> list[tuple[object, ...]]:
    return [(k, v["texts"], f"{100 * v['share']:.1f}%", v["truncated"]) for k, v in profile.workload["buckets"].items()]


def _cutover_md(c: Cutover) -> list[str]:
    g_rows = [(g.gate.expr, g.status, g.message()) for g in c.gates]
    undecided = [f"- {q.summary}" for q in c.quality if q.holds is not True]
    return [
        f"**{c.verdict()}**",
        "",
        f"old `{c.urls.get('old')}`, new `{c.urls.get('new')}`",
        "",
        "## Quality (new - old)",
        "",
        table(QUALITY_HEADERS, quality_rows(c)),
        *undecided,
        "",
        "## Capacity gates",
        "",
        table(["gate", "verdict", "message"], g_rows),
    ]


QUALITY_HEADERS = ("metric", "queries", "old", "new", "delta", "95% CI", "one-sided bound", "margin", "verdict")


def quality_rows(c: Cutover) -> list[tuple[object, ...]]:
    return [
        (
            q.metric,
            q.queries,
            f"{q.old:.4f}",
            f"{q.new:.4f}",
            f"{q.delta:+.4f}",
            f"[{q.ci_low:+.4f}, {q.ci_high:+.4f}]",
            f"{q.lower_bound:+.4f}",
            f"-{q.margin:g}",
            {True: "holds", False: "drops", None: "undecided"}[q.holds],
        )
        for q in c.quality
    ]


def render_markdown(profile: LoadProfile, cutover: Cutover | None = None) -> str:
    title = ("Cutover: " + ("STANDS" if cutover.stands else "DOES NOT STAND")) if cutover else "Load profile"
    lines = [f"# {title}", ""]
    if cutover is not None:
        lines += _cutover_md(cutover)
    lines += ["## Load by level", "", table(LEVEL_HEADERS, [level_row(lv) for lv in profile.levels])]
    if local_ratio_rows(profile):
        lines += [
            "## What a server buys (against the local reference)",
            "",
            table(RATIO_HEADERS, local_ratio_rows(profile)),
        ]
    lines += [
        "## By length bucket",
        "",
        table(BUCKET_HEADERS, bucket_rows(profile)),
        "## Workload (the dataset's length distribution)",
        "",
        table(["bucket (tokens)", "texts", "share", "truncated"], _workload_rows(profile)),
        "## Plan",
        "",
        table(["setting", "value"], [(k, str(v)) for k, v in profile.plan.to_dict().items()]),
    ]
    errors = [(lv.target, lv.batch_size, lv.concurrency, e) for lv in profile.levels for e in lv.first_errors]
    if errors:
        lines += ["## First errors", "", table(["target", "batch", "concurrency", "error"], errors)]
    return "\n".join(lines)


def series(profile: LoadProfile) -> Mapping[str, Sequence[h.Point]]:
    """One line per target and batch size: (concurrency, {inputs_per_s, p95_ms})."""
    out: dict[str, list[h.Point]] = {}
    multi_batch = len(profile.plan.batch_sizes) > 1
    for lv in profile.levels:
        label = f"{lv.target} (batch {lv.batch_size})" if multi_batch else lv.target
        out.setdefault(label, []).append((float(lv.concurrency), {m: lv.figures.value(m) for m in PLOT_METRICS}))
    return out


def capacity_figure(profile: LoadProfile) -> Figure:
    """inputs/s and p95 against concurrency; concurrency on a log2 axis (levels like 1, 4, 16, 64)."""
    fig = h.line_chart(
        "Throughput and p95 latency vs concurrency", "requests in flight", PLOT_METRICS, series(profile), None
    )
    levels = sorted({lv.concurrency for lv in profile.levels})
    for ax in fig.axes:
        if ax.get_visible() and len(levels) > 1:
            ax.set_xscale("log", base=2)
            ax.set_xticks(levels)
            ax.set_xticklabels([str(c) for c in levels])
            ax.minorticks_off()
    return fig


def render_html(profile: LoadProfile, cutover: Cutover | None = None) -> str:
    title = ("Cutover: " + ("STANDS" if cutover.stands else "DOES NOT STAND")) if cutover else "Load profile"
    parts = [h.heading(title, 1)]
    if cutover is not None:
        parts += [
            h.paragraph(cutover.verdict()),
            h.paragraph(f"old {cutover.urls.get('old')}, new {cutover.urls.get('new')}", "meta"),
            h.heading("Quality (new - old)"),
            h.table(
                QUALITY_HEADERS,
                quality_rows(cutover),
                cell_classes=[("",) * 8 + ("up" if q.holds else "down",) for q in cutover.quality],
            ),
            *[h.paragraph(q.summary, "meta") for q in cutover.quality if q.holds is not True],
            h.heading("Capacity gates"),
            h.table(
                ["gate", "verdict", "message"],
                [(g.gate.expr, g.status, g.message()) for g in cutover.gates],
                cell_classes=[("", "up" if g.passed else "down", "") for g in cutover.gates],
            ),
        ]
    parts += [
        h.heading("Throughput and latency"),
        h.figure_html(
            h.png_data_uri(capacity_figure(profile)),
            "inputs/s and p95 latency (ms) per target against requests in flight",
        ),
        h.heading("Load by level"),
        h.table(LEVEL_HEADERS, [level_row(lv) for lv in profile.levels]),
    ]
    if local_ratio_rows(profile):
        parts += [
            h.heading("What a server buys (against the local reference)"),
            h.table(RATIO_HEADERS, local_ratio_rows(profile)),
        ]
    parts += [
        h.heading("By length bucket"),
        h.table(BUCKET_HEADERS, bucket_rows(profile)),
        h.heading("Workload"),
        h.table(["bucket (tokens)", "texts", "share", "truncated"], _workload_rows(profile)),
    ]
    return h.page(title, parts)


def write_load_reports(profile: LoadProfile, out: str | Path, cutover: Cutover | None = None) -> dict[str, Path]:
    out = Path(out)
    return {
        "json": atomic_write_json(out / "load.json", to_dict(profile, cutover)),
        "markdown": atomic_write_text(out / "report.md", render_markdown(profile, cutover)),
        "html": atomic_write_text(out / "report.html", render_html(profile, cutover)),
    }
