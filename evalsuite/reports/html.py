"""Self-contained HTML reports: inline CSS, plots as inline base64 PNG (matplotlib, Agg canvas).

Nothing is fetched when the page opens: no scripts, fonts, stylesheets or images by URL.
Figures are drawn on ``matplotlib.figure.Figure`` with an Agg canvas, never through pyplot,
so the caller's matplotlib backend and global state are left alone.
"""

from __future__ import annotations

import base64
import html
import io
import multiprocessing
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..run.cache.results import Entry, ResultStore

Point = tuple[float, Mapping[str, float]]
Interval = Mapping[str, tuple[float, float]]  # per metric (low, high): an error bar
BASE_COLOR = "#d62728"
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#222;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th:first-child,td:first-child{text-align:left}
tr.base td{background:#fff3f3;font-weight:600}
td.up{color:#1a7f37}td.down{color:#b42318}
figure{margin:1rem 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.85rem;color:#555}
.meta{color:#555;font-size:.9rem}
"""


def _figure(n_panels: int, title: str) -> tuple[Figure, list[Axes]]:
    from matplotlib.figure import Figure

    cols = min(n_panels, 2)
    rows = (n_panels + cols - 1) // cols
    fig = Figure(figsize=(5.2 * cols, 3.4 * rows), dpi=100, layout="constrained")
    grid = fig.subplots(rows, cols, squeeze=False)
    axes = [ax for row in grid for ax in row]
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    fig.suptitle(title)
    return fig, axes[:n_panels]


def png_data_uri(fig: Figure) -> str:
    """The figure as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(png_bytes(fig)).decode("ascii")


def png_bytes(fig: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


PLOT_LIBRARIES = ("evalsuite", "matplotlib", "pillow", "numpy")


def chart_uri(
    store: ResultStore | None, chart: Callable[..., Figure | None], *args: object, **kwargs: object
) -> str | None:
    """``png_data_uri(chart(*args, **kwargs))`` (None when the chart draws nothing). With ``store`` (the result
    cache), the PNG drawn before from the same chart function, arguments (plain data), library versions and
    source is reused, and matplotlib is not imported."""
    if store is None:
        fig = chart(*args, **kwargs)
        return None if fig is None else png_data_uri(fig)
    png = store.memo("plot", chart_fields(chart, args, kwargs), lambda: draw_png(chart, args, kwargs), _dump, _undump)
    return _uri(png)


def chart_fields(
    chart: Callable[..., object], args: Sequence[object], kwargs: Mapping[str, object]
) -> dict[str, object]:
    """The result cache's key fields of one chart: the function, its plain-data arguments, the plotting libraries'
    versions and the source of the modules that draw it."""
    from ..run.cache.results import code_digest, library_versions

    return {
        "chart": f"{chart.__module__}.{chart.__qualname__}",
        "args": list(args),
        "kwargs": dict(kwargs),
        "libraries": library_versions(PLOT_LIBRARIES),
        "code": code_digest(tuple(dict.fromkeys((__name__, chart.__module__, "evalsuite.run.cache.results")))),
    }


def draw_png(chart: Callable[..., Figure | None], args: Sequence[object], kwargs: Mapping[str, object]) -> bytes:
    """The chart's PNG (empty when it draws nothing)."""
    fig = chart(*args, **kwargs)
    return b"" if fig is None else png_bytes(fig)


def _dump(data: bytes) -> tuple[object, dict[str, np.ndarray]]:
    return {}, {"png": np.frombuffer(data, dtype=np.uint8)}


def _undump(entry: Entry) -> bytes:
    return entry.arrays["png"].tobytes()


def _uri(png: bytes) -> str | None:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii") if png else None


class Charts:
    """The charts of one page drawn while the caller writes its other files: :meth:`start` looks a chart up in
    the result cache and hands one it lacks to a worker process forked from this one (it has this process's
    imports, so it starts drawing at once); :meth:`uri` is :func:`chart_uri` of that chart, waiting for its
    worker and storing what it drew. The bytes are the ones :func:`chart_uri` draws here (the same function on
    the same arguments and libraries); a chart whose worker failed is drawn here. Off Linux (where ``fork`` is
    not the safe default) or with one CPU nothing starts early and :meth:`uri` is :func:`chart_uri`. Use it as a context manager: leaving it
    stops the workers."""

    def __init__(self, store: ResultStore | None, workers: int | None = None) -> None:
        self.store = store
        forks = sys.platform == "linux"  # fork is the default start method there; elsewhere it may be unsafe
        self.workers = 0 if not forks else min(os.cpu_count() or 1, 2) if workers is None else workers
        self._pool: ProcessPoolExecutor | None = None
        self._started: dict[str, tuple[dict[str, object] | None, Future[bytes] | bytes]] = {}

    def __enter__(self) -> Charts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    @staticmethod
    def _key(chart: Callable[..., object], args: Sequence[object], kwargs: Mapping[str, object]) -> str:
        from ..run.cache.results import canonical_json

        return canonical_json([f"{chart.__module__}.{chart.__qualname__}", list(args), dict(kwargs)])

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"))
        return self._pool

    def start(self, chart: Callable[..., Figure | None], *args: object, **kwargs: object) -> None:
        """Begin drawing the chart in a worker unless the result cache has it (nothing without workers)."""
        key = self._key(chart, args, kwargs)
        if key in self._started or self.workers < 2:
            return
        fields = None
        if self.store is not None:
            fields = chart_fields(chart, args, kwargs)
            found = self.store.load("plot", fields, _undump)
            if found is not None:
                self._started[key] = (fields, found)
                return
        self._started[key] = (fields, self._executor().submit(draw_png, chart, args, kwargs))

    def uri(self, chart: Callable[..., Figure | None], *args: object, **kwargs: object) -> str | None:
        """:func:`chart_uri` of the chart: what its worker drew (then stored) or the cache held, if started."""
        started = self._started.pop(self._key(chart, args, kwargs), None)
        if started is None:
            return chart_uri(self.store, chart, *args, **kwargs)
        fields, got = started
        if isinstance(got, bytes):
            return _uri(got)
        try:
            png = got.result()
        except Exception:  # the worker died, or the chart raised there: draw it here (raising here, if it does)
            png = draw_png(chart, args, kwargs)
        if self.store is not None and fields is not None:  # a miss when it started: stored as chart_uri stores it
            payload, arrays = _dump(png)
            self.store.save("plot", fields, payload, arrays)
        return _uri(png)


def _yerr(values: Sequence[float], bars: Sequence[Interval | None], m: str) -> list[list[float]] | None:
    """matplotlib's asymmetric ``yerr`` (below, above) from intervals; None when no point has one."""
    if not any(b is not None and m in b for b in bars):
        return None
    below = [max(0.0, v - b[m][0]) if b is not None and m in b else 0.0 for v, b in zip(values, bars, strict=True)]
    above = [max(0.0, b[m][1] - v) if b is not None and m in b else 0.0 for v, b in zip(values, bars, strict=True)]
    return [below, above]


def line_chart(
    title: str,
    xlabel: str,
    metrics: Sequence[str],
    series: Mapping[str, Sequence[Point]],
    base: Point | None,
    *,
    errors: Mapping[str, Sequence[tuple[float, Interval]]] | None = None,
) -> Figure:
    """One panel per metric: a line per series over numeric x; the base is a red star and a
    dashed reference line; ``errors`` (per series, per x): error bars (low, high) per metric."""
    fig, axes = _figure(len(metrics), title)
    xs_all = sorted({x for pts in series.values() for x, _ in pts} | ({base[0]} if base else set()))
    for ax, m in zip(axes, metrics, strict=True):
        for label, pts in series.items():
            pts = sorted(pts, key=lambda p: p[0])
            xs, ys = [x for x, _ in pts], [v[m] for _, v in pts]
            line = ax.plot(xs, ys, marker="o", label=label or m)
            by_x = dict((errors or {}).get(label, ()))
            yerr = _yerr(ys, [by_x.get(x) for x in xs], m)
            if yerr is not None:
                ax.errorbar(xs, ys, yerr=yerr, fmt="none", ecolor=line[0].get_color(), capsize=3, linewidth=1)
        if base is not None:
            ax.axhline(base[1][m], color=BASE_COLOR, linestyle="--", linewidth=1)
            ax.plot(
                [base[0]],
                [base[1][m]],
                marker="*",
                markersize=14,
                color=BASE_COLOR,
                linestyle="none",
                label="base",
                zorder=5,
            )
        ax.set_title(m)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(m)
        ax.set_xticks(xs_all)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def bar_chart(
    title: str,
    metrics: Sequence[str],
    categories: Sequence[str],
    series: Mapping[str, Mapping[str, Mapping[str, float]]],
    base_metrics: Mapping[str, float],
    base_bar: tuple[str, str] | None,
    *,
    errors: Mapping[str, Mapping[str, Interval]] | None = None,
    base_label: str = "base",
) -> Figure:
    """One panel per metric: grouped bars (category × series); the (series, category) bar equal
    to the base is hatched with a red edge, and a dashed red line marks the base value (``base_label``
    in the legend); ``errors`` (per series, per category): error bars (low, high) per metric."""
    fig, axes = _figure(len(metrics), title)
    n = max(len(series), 1)
    width = 0.8 / n
    positions = range(len(categories))
    for ax, m in zip(axes, metrics, strict=True):
        values = [base_metrics[m]]
        for k, (label, by_cat) in enumerate(series.items()):
            xs = [i + (k - (n - 1) / 2) * width for i in positions]
            ys = [by_cat.get(c, {}).get(m, float("nan")) for c in categories]
            values += [y for y in ys if y == y]
            yerr = _yerr(ys, [(errors or {}).get(label, {}).get(c) for c in categories], m)
            bars = ax.bar(xs, ys, width=width * 0.95, label=label or None, yerr=yerr, capsize=3)
            if yerr is not None:
                values += [y - lo for y, lo in zip(ys, yerr[0], strict=True) if y == y]
                values += [y + hi for y, hi in zip(ys, yerr[1], strict=True) if y == y]
            for bar, c in zip(bars, categories, strict=True):
                if base_bar == (label, c):
                    bar.set_hatch("//")
                    bar.set_edgecolor(BASE_COLOR)
                    bar.set_linewidth(2)
        ax.axhline(base_metrics[m], color=BASE_COLOR, linestyle="--", linewidth=1, label=base_label)
        ax.set_xticks(list(positions))
        ax.set_xticklabels([_short(c) for c in categories], rotation=20 if len(categories) > 3 else 0, fontsize=8)
        hi = max(values)
        ax.set_ylim(min(0.0, min(values)), hi + max(0.05 * hi, 0.01))  # bars start at zero: no exaggerated gap
        ax.set_title(m)
        ax.set_ylabel(m)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def delta_chart(
    title: str,
    metrics: Sequence[str],
    categories: Sequence[str],
    deltas: Mapping[str, Mapping[str, float]],
    intervals: Mapping[str, Interval] | None = None,
) -> Figure:
    """One panel per metric: a bar per category (its delta on that metric, which may be negative) around a
    solid zero line; ``intervals`` (per category): error bars (low, high) per metric."""
    fig, axes = _figure(len(metrics), title)
    positions = list(range(len(categories)))
    for ax, m in zip(axes, metrics, strict=True):
        ys = [deltas.get(c, {}).get(m, float("nan")) for c in categories]
        yerr = _yerr(ys, [(intervals or {}).get(c) for c in categories], m)
        colours = ["#1a7f37" if y > 0 else "#b42318" if y < 0 else "#888" for y in ys]
        ax.bar(positions, ys, width=0.6, color=colours, yerr=yerr, capsize=4)
        ax.axhline(0.0, color="#444", linewidth=1)
        ax.set_xticks(positions)
        ax.set_xticklabels([_short(c) for c in categories], fontsize=8)
        ax.set_title(m)
        ax.set_ylabel(f"Δ {m}")
        ax.grid(axis="y", alpha=0.3)
    return fig


def pareto_chart(
    title: str,
    xlabel: str,
    quality: Mapping[str, Sequence[float]],
    xs: Sequence[float],
    labels: Sequence[str],
    groups: Sequence[str],
    front: Callable[[Sequence[tuple[float, float]]], list[int]],
    *,
    log_x: bool = False,
) -> Figure:
    """One panel per quality measure: a point per cell (colour per group, text label), and the
    Pareto front (lower cost, higher quality) as a dashed step line."""
    fig, axes = _figure(len(quality), title)
    colours = {g: f"C{i % 10}" for i, g in enumerate(dict.fromkeys(groups))}
    for ax, (name, ys) in zip(axes, quality.items(), strict=True):
        for g, colour in colours.items():
            pts = [(x, y) for x, y, gg in zip(xs, ys, groups, strict=True) if gg == g]
            ax.scatter([x for x, _ in pts], [y for _, y in pts], color=colour, label=g, zorder=3)
        for x, y, label in zip(xs, ys, labels, strict=True):
            ax.annotate(_short(label, 22), (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
        best = front(list(zip(xs, ys, strict=True)))
        ax.plot(
            [xs[i] for i in best],
            [ys[i] for i in best],
            color="#444",
            linestyle="--",
            linewidth=1,
            drawstyle="steps-post",
            label="Pareto front",
            zorder=2,
        )
        if log_x:
            ax.set_xscale("log")
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def _short(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    row_classes: Sequence[str] = (),
    cell_classes: Sequence[Sequence[str]] = (),
) -> str:
    def fmt(v: object) -> str:
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cls = row_classes[i] if i < len(row_classes) and row_classes[i] else ""
        cc = cell_classes[i] if i < len(cell_classes) else ()
        tds = "".join(f"<td{_cls(cc[j] if j < len(cc) else '')}>{html.escape(fmt(v))}</td>" for j, v in enumerate(row))
        body.append(f"<tr{_cls(cls)}>{tds}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>\n"


def figure_html(uri: str, caption: str) -> str:
    return (
        f'<figure><img src="{uri}" alt="{html.escape(caption)}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>\n"
    )


def page(title: str, parts: Sequence[str]) -> str:
    """A complete HTML document; ``parts`` are already-escaped HTML fragments."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1"><title>{html.escape(title)}</title>'
        f"<style>{_CSS}</style></head><body>\n" + "".join(parts) + "</body></html>\n"
    )


def heading(text: str, level: int = 2) -> str:
    return f"<h{level}>{html.escape(text)}</h{level}>\n"


def paragraph(text: str, cls: str = "") -> str:
    return f"<p{_cls(cls)}>{html.escape(text)}</p>\n"


def _cls(name: str) -> str:
    return f' class="{html.escape(name)}"' if name else ""
