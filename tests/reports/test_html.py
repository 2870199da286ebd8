"""report.html: one self-contained file whose plots are present, decodable and non-empty."""

import base64
import re

import pytest

from evalsuite.reports.html import bar_chart, line_chart, png_data_uri
from evalsuite.run.pipeline import prepare
from evalsuite.run.spec import RunSpec
from evalsuite.sweep import parse_vary, plan_cells, run_sweep
from evalsuite.sweep.reports import write_sweep_reports
from evalsuite.sweep.reports.html import sweep_html

PNG = b"\x89PNG\r\n\x1a\n"
IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def _pngs(html):
    return [base64.b64decode(m) for m in IMG.findall(html)]


@pytest.fixture(scope="module")
def sweep(tiny_model_dir, minibeir_dir, tmp_path_factory):
    spec = RunSpec(
        model=str(tiny_model_dir),
        dataset=str(minibeir_dir),
        device="cpu",
        metrics=("ndcg@10", "recall@100"),
        cache_dir=str(tmp_path_factory.mktemp("cache")),
    )
    prepared = prepare(spec)
    axes = parse_vary(
        ["pooling=cls,mean,last", "dim=32,16,8", "max_length=16,32", "prefixes=none,swapped,q: |", "dtype=float32"]
    )
    return run_sweep(prepared, plan_cells(prepared.contract, axes, info=prepared.model), axes=axes)


def test_report_html_is_self_contained_with_one_plot_per_axis(sweep, tmp_path):
    path = write_sweep_reports(sweep, tmp_path)["report.html"]
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    pngs = _pngs(html)
    assert len(pngs) == 5  # pooling bars, dim line, max length line, prefix bars, dtype bars
    for png in pngs:
        assert png.startswith(PNG) and len(png) > 5_000
    assert "metrics vs dimension" in html.lower() and "max length" in html
    # nothing fetched when opened offline
    assert not re.search(r'(src|href)="(https?:)?//', html) and "<script" not in html and "@import" not in html
    for c in sweep.cells:
        assert c.cell.name.replace('"', "&quot;") in html


def test_plots_are_drawn_not_blank(sweep):
    from io import BytesIO

    from matplotlib.image import imread

    for png in _pngs(sweep_html(sweep)):
        pixels = imread(BytesIO(png))
        assert pixels.shape[0] > 200 and pixels.shape[1] > 300
        assert pixels[..., :3].std() > 0.05  # lines, bars and text, not a uniform canvas


def test_chart_helpers_render_pngs():
    metrics = ["ndcg@10"]
    line = line_chart(
        "t", "dimension", metrics, {"": [(8, {"ndcg@10": 0.2}), (16, {"ndcg@10": 0.3})]}, (16, {"ndcg@10": 0.3})
    )
    bars = bar_chart(
        "t",
        metrics,
        ["cls", "mean"],
        {"": {"cls": {"ndcg@10": 0.1}, "mean": {"ndcg@10": 0.3}}},
        {"ndcg@10": 0.3},
        ("", "mean"),
    )
    for fig in (line, bars):
        uri = png_data_uri(fig)
        assert base64.b64decode(uri.split(",", 1)[1]).startswith(PNG)


def test_charts_draw_the_intervals_as_error_bars():
    from matplotlib.container import BarContainer, ErrorbarContainer

    line = line_chart(
        "t",
        "dimension",
        ["ndcg@10"],
        {"": [(8, {"ndcg@10": 0.2}), (16, {"ndcg@10": 0.3})]},
        (32, {"ndcg@10": 0.35}),
        errors={"": [(8, {"ndcg@10": (0.15, 0.28)}), (16, {"ndcg@10": (0.25, 0.32)})]},
    )
    (bars,) = [c for c in line.axes[0].containers if isinstance(c, ErrorbarContainer)]
    segments = bars.lines[2][0].get_segments()
    assert [(round(s[0][1], 6), round(s[1][1], 6)) for s in segments] == [(0.15, 0.28), (0.25, 0.32)]
    chart = bar_chart(
        "t",
        ["ndcg@10"],
        ["cls", "mean"],
        {"": {"cls": {"ndcg@10": 0.1}, "mean": {"ndcg@10": 0.3}}},
        {"ndcg@10": 0.3},
        ("", "mean"),
        errors={"": {"cls": {"ndcg@10": (0.05, 0.2)}}},
    )
    (container,) = [c for c in chart.axes[0].containers if isinstance(c, BarContainer)]
    err = container.errorbar.lines[2][0].get_segments()
    assert [(round(s[0][1], 6), round(s[1][1], 6)) for s in err] == [(0.05, 0.2), (0.3, 0.3)]  # none for 'mean'
    plain = line_chart("t", "dimension", ["ndcg@10"], {"": [(8, {"ndcg@10": 0.2})]}, None)
    assert not [c for c in plain.axes[0].containers if isinstance(c, ErrorbarContainer)]


def test_bar_charts_start_at_zero_so_a_small_gap_is_not_drawn_as_a_large_one():
    from evalsuite.reports.html import bar_chart

    fig = bar_chart(
        "pooling", ["ndcg@10"], ["cls", "mean"], {"": {"cls": {"ndcg@10": 0.67}, "mean": {"ndcg@10": 0.76}}},
        {"ndcg@10": 0.76}, ("", "mean"),
    )  # fmt: skip
    low, high = fig.axes[0].get_ylim()
    assert low == 0.0 and 0.76 < high <= 0.8
