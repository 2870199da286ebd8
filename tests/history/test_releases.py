"""Five simulated releases through the example project (`examples/history_ci`): the bundled model with weight
noise growing release by release, each built into a directory of its own name (`embedder-v1.0`, `embedder-v1.1`,
...), as a release pipeline's build writes them: the project's `model_name = "minilm"` makes them one lineage. Each release is gated by `pytest --model-rev` against the refreshed baseline
(the previous release, `max_drop=0.01`) and against the first recorded release (`max_drop_from_first=0.02`);
every release passes the first gate, the second fails at the first release that crosses 0.02, with the paired CI.
Then `evalsuite history` shows the releases, and the Markdown summary was written for each gated session (and
appended to $GITHUB_STEP_SUMMARY).

The releases are computed once for the module (one encoding per release; a baseline refresh reads the
embedding cache), in-process, as a CI job would run them one after another.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from evalsuite.cli import main
from evalsuite.history.store import HistoryStore

from .conftest import noisy_release

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.xdist_group("history_releases")]

REPO = Path(__file__).resolve().parents[2]
# Noise scales (x each weight matrix's std): release 0 is the bundled model; ndcg@10 measured 0.7635, 0.7659,
# 0.7590, 0.7547, 0.7487, 0.7403 (each within 0.01 of the one before; 0.0232 below release 0 at release 5).
SCALES = (0.0, 0.18, 0.20, 0.21, 0.22, 0.23)


class _Keep:
    report = None

    def pytest_unconfigure(self, config):
        from evalsuite.pytest_plugin import REPORT

        self.report = config.stash.get(REPORT, None)


@dataclass
class Release:
    index: int
    revision: str
    exit_code: int
    results: dict | None  # the gated session's results.json (None for release 0: it only wrote the baseline)
    summary: str | None


@dataclass
class Series:
    project: Path
    releases: list[Release]
    step_summary: Path
    models: list[Path]


def _pytest(project: Path, *args: str) -> tuple[int, object]:
    keep = _Keep()
    start = time.perf_counter()
    old = Path.cwd()
    os.chdir(project)
    try:
        code = pytest.main(["-p", "no:randomly", "-p", "no:xdist", "-q", "--device", "cpu", *args], plugins=[keep])
    finally:
        os.chdir(old)
    print(f"release session {' '.join(args[4:]) or 'gated'}: {time.perf_counter() - start:.1f} s")
    return int(code), keep.report


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory, bundled_model_dir: Path, bundled_model_loaded) -> Series:
    from evalsuite.model import resolve_model

    base = tmp_path_factory.mktemp("releases")
    project = base / "project"
    shutil.copytree(REPO / "examples" / "history_ci", project)
    step_summary = base / "step_summary.md"
    releases, models = [], []
    for i, scale in enumerate(SCALES):
        model = noisy_release(bundled_model_dir, base / f"r{i}" / f"embedder-v1.{i}", scale)
        models.append(model)
        rev = resolve_model(str(model)).revision
        flags = ("--model", str(model), "--model-rev", rev)
        if i == 0:  # the first release: its baseline, and its record (no gate judged)
            code, _ = _pytest(project, *flags, "--update-baseline")
            assert code == 0
            releases.append(Release(0, rev, code, None, None))
            continue
        if i == len(SCALES) - 1:
            os.environ["GITHUB_STEP_SUMMARY"] = str(step_summary)
        try:
            code, _ = _pytest(project, *flags)
        finally:
            os.environ.pop("GITHUB_STEP_SUMMARY", None)
        results = json.loads((project / "reports" / "minibeir" / "results.json").read_text())
        summary = (project / "reports" / "summary.md").read_text()
        releases.append(Release(i, rev, code, results, summary))
        if code == 0:  # CI refreshes the baseline after a passing release
            refreshed, _ = _pytest(project, *flags, "--update-baseline")
            assert refreshed == 0
    return Series(project, releases, step_summary, models)


def _gate(release: Release, expr: str) -> dict:
    assert release.results is not None
    return next(g for g in release.results["gates"] if g["gate"] == expr)


def test_every_release_passes_the_refreshed_baseline_gate(series: Series):
    values = []
    for r in series.releases[1:]:
        g = _gate(r, "ndcg@10:max_drop=0.01")
        assert g["verdict"] == "pass", (r.index, g)
        assert g["delta"] > -0.01
        values.append(g["candidate"])
    # the refreshed baseline is the previous release: each gate's reference is the release before it
    for before, after in zip(series.releases[1:], series.releases[2:], strict=False):
        assert _gate(after, "ndcg@10:max_drop=0.01")["reference"] == pytest.approx(
            _gate(before, "ndcg@10:max_drop=0.01")["candidate"]
        )
    assert values[-1] < values[0] - 0.02  # and yet the releases drifted by more than 0.02


def test_drop_from_first_fails_at_the_first_release_that_crosses_it_with_the_paired_ci(series: Series):
    first = json.loads((series.project / "baselines" / "minibeir.json").read_text())  # refreshed: the last passing
    records = HistoryStore(series.project / "history").records()
    anchor = records[0]
    assert anchor.revision == series.releases[0].revision
    verdicts = [_gate(r, "ndcg@10:max_drop_from_first=0.02")["verdict"] for r in series.releases[1:]]
    crossed = [r.results["metrics"]["ndcg@10"] < anchor.metrics["ndcg@10"].value - 0.02 for r in series.releases[1:]]
    assert crossed.index(True) == len(crossed) - 1, crossed  # the simulation crosses at the last release
    assert verdicts == ["fail" if c else "pass" for c in crossed]
    assert [r.exit_code for r in series.releases[1:]] == [0, 0, 0, 0, 1]
    last = series.releases[-1]
    g = _gate(last, "ndcg@10:max_drop_from_first=0.02")
    # independent: the mean paired difference of the per-query scores, from results.json and the first record
    cand, ref = last.results["per_query"]["ndcg@10"], anchor.scores("ndcg@10")
    expected = float(np.mean([cand[q] - ref[q] for q in sorted(ref)]))
    assert g["delta"] == pytest.approx(expected, abs=1e-6)
    assert g["ci"]["n_queries"] == len(ref) == 190
    assert g["ci"]["low"] < expected < g["ci"]["high"]  # reported with the verdict (judged on the point estimate)
    assert g["reference"] == pytest.approx(anchor.metrics["ndcg@10"].value)
    assert first["metrics"]["ndcg@10"] == pytest.approx(series.releases[-2].results["metrics"]["ndcg@10"])


def test_the_history_holds_one_record_per_release_with_its_verdicts(series: Series):
    records = HistoryStore(series.project / "history").records()
    assert [r.revision for r in records] == [r.revision for r in series.releases]
    assert records[0].gates == () and records[0].verdict is None
    assert [r.verdict for r in records[1:]] == ["pass", "pass", "pass", "pass", "fail"]
    for rec, rel in zip(records[1:], series.releases[1:], strict=True):
        assert rec.metrics["ndcg@10"].value == pytest.approx(rel.results["metrics"]["ndcg@10"])
        assert rec.metrics["ndcg@10"].low < rec.metrics["ndcg@10"].value < rec.metrics["ndcg@10"].high
        assert rec.scores("mrr@10") == pytest.approx(rel.results["per_query"]["mrr@10"], abs=1e-6)
        assert rec.model == "minilm" and rec.dataset == "minibeir" and len(rec.query_ids) == 190
    # each release names the directory it was read from; the lineage is the declared model_name
    assert [r.source for r in records] == [str(m.resolve()) for m in series.models]
    assert {r.contract["model"] for r in records} == {"minilm"}


def test_evalsuite_history_shows_the_releases_as_a_table_and_a_plot(series: Series, capsys):
    html = series.project / "reports" / "history.html"
    assert main(["history", str(series.project / "history"), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert "minilm on minibeir: 6 release(s) from 6 directories / hub ids" in out
    rows = [line for line in out.splitlines() if re.match(r"^\s+\d+\s+[0-9a-f]{12}\s", line)]
    assert [line.split()[1] for line in rows] == [r.revision[:12] for r in series.releases]
    assert [line.split()[2] for line in rows] == [str(m.resolve()) for m in series.models]
    assert re.search(r"ndcg@10:max_drop_from_first=0\.02 FAIL", rows[-1]) and rows[-1].split()[-1] == "FAIL"
    from evalsuite.history.plot import thresholds

    records = HistoryStore(series.project / "history").records()
    lines = thresholds(records, "ndcg@10")  # the dashed lines: the lowest value each release needed to pass
    first = records[0].metrics["ndcg@10"].value
    assert lines["ndcg@10:max_drop_from_first=0.02"] == [(i, pytest.approx(first - 0.02)) for i in range(1, 6)]
    assert lines["ndcg@10:max_drop=0.01"] == [
        (i, pytest.approx(records[i - 1].metrics["ndcg@10"].value - 0.01, abs=1e-6)) for i in range(1, 6)
    ]
    page = html.read_text()
    assert page.count('<img src="data:image/png;base64,') == 2  # ndcg@10 and mrr@10
    assert "http://" not in page and "https://" not in page  # self-contained
    # the default place: the spec file's history, the page beside the reports
    os.chdir(series.project)
    try:
        assert main(["history"]) == 0
    finally:
        os.chdir(REPO)
    assert (series.project / "reports" / "history.html").is_file()


def test_the_markdown_summary_is_written_for_the_gated_session_and_the_step_summary(series: Series):
    text = series.releases[-1].summary
    assert text is not None and text.startswith("### evalsuite: FAIL")
    row = next(line for line in text.splitlines() if "max_drop_from_first" in line)
    g = _gate(series.releases[-1], "ndcg@10:max_drop_from_first=0.02")
    delta = f"{g['delta']:+.4f} ({g['ci']['low']:+.4f} .. {g['ci']['high']:+.4f})"
    assert "**FAIL**" in row and delta in row and f"first release {series.releases[0].revision[:12]}" in row
    assert re.search(r"`[^`]+` \d\.\d{3}→\d\.\d{3}", row)  # the queries that lost most
    assert "reports: `" in text and "history: `" in text
    assert series.step_summary.read_text() == text + "\n"
    assert series.releases[1].summary is not None and series.releases[1].summary.startswith("### evalsuite: PASS")


def test_evalsuite_run_records_an_ungated_run(series: Series, tmp_path: Path, capsys):
    history = tmp_path / "history"
    argv = ["run", "--model", str(series.models[0]), "--model-name", "minilm", "--device", "cpu"]
    argv += ["--metrics", "ndcg@10,mrr@10"]
    assert main([*argv, "--out", str(tmp_path / "out"), "--history", str(history)]) == 0  # the embeddings are cached
    (rec,) = HistoryStore(history).records()
    first = HistoryStore(series.project / "history").records()[0]
    assert rec.key == first.key and rec.gates == ()
    assert rec.metrics == first.metrics and rec.per_query == first.per_query
    blocker = tmp_path / "file"
    blocker.write_text("")
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "out2"), "--history", str(blocker / "h")]) == 2
    err = capsys.readouterr().err
    assert f"history directory {blocker / 'h'}: cannot be written" in err
    assert not (tmp_path / "out2").exists()  # refused before anything was encoded or written


def test_an_unnamed_lineage_beside_named_ones_is_said_not_passed_as_the_first_release(series: Series, tmp_path: Path):
    """A pipeline that forgot its model_name: the release's lineage is its directory's name, the history holds only
    the lineage 'minilm' on the dataset: every history gate is inconclusive naming the lineage found and how to name
    this one, and the session fails (the default policy), instead of passing as "the first release"."""
    project = tmp_path / "project"
    shutil.copytree(series.project, project)
    toml = project / "evalsuite.toml"
    toml.write_text(re.sub(r"(?m)^model_name = .*$", "", toml.read_text()))
    model = series.models[-1]  # the release that dropped 0.0232 below the first (its embeddings are cached)
    code, _ = _pytest(project, "--model", str(model), "--model-rev", series.releases[-1].revision)
    assert code == 1
    results = json.loads((project / "reports" / "minibeir" / "results.json").read_text())
    g = next(g for g in results["gates"] if g["gate"] == "ndcg@10:max_drop_from_first=0.02")
    assert g["verdict"] == "inconclusive"
    assert "'minilm' (6 release(s)" in g["note"] and 'model_name = "minilm"' in g["note"]
    assert f"no earlier release of {model.name!r} on minibeir" in g["note"]
    # named, the same release gates against the first and fails on its drop
    code, _ = _pytest(
        project, "--model", str(model), "--model-rev", series.releases[-1].revision, "--model-name", "minilm"
    )
    results = json.loads((project / "reports" / "minibeir" / "results.json").read_text())
    g = next(g for g in results["gates"] if g["gate"] == "ndcg@10:max_drop_from_first=0.02")
    assert code == 1 and g["verdict"] == "fail" and g["delta"] < -0.02


def test_a_gated_pytester_session_writes_the_summary_and_the_step_summary(
    series: Series, pytester: pytest.Pytester, monkeypatch
):
    step = pytester.path / "step.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    model = str(series.models[0])
    result = pytester.runpytest(
        "-p",
        "no:randomly",
        "-p",
        "no:xdist",
        "--model",
        model,
        "--device",
        "cpu",
        "--metrics",
        "ndcg@10",
        "--gate",
        "ndcg@10>=0.9",
        "--gate",
        "ndcg@10>=0.5",
        "--summary-md",
        "out/summary.md",
    )
    assert result.ret == 1
    text = (pytester.path / "out" / "summary.md").read_text()
    assert text.startswith("### evalsuite: FAIL\n\n2 gate(s): 1 PASS, 1 FAIL.")
    assert "| minibeir | `ndcg@10>=0.9` | **FAIL** | - | - | - |" in text
    assert "| minibeir | `ndcg@10>=0.5` | PASS |" in text
    assert step.read_text() == "earlier step\n" + text + "\n"  # appended, as GitHub collects each step's
