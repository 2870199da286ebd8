"""A sweep run again on unchanged inputs: every contract, statistic, slice comparison and plot comes from the
result cache, the process imports none of faiss, ranx, numba, scipy, matplotlib, torch or transformers, and
what it writes equals the cold run's (apart from the execution record and each cell's provenance)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalsuite.cli import main
from evalsuite.reports.html import chart_uri
from evalsuite.run.cache import results as resultcache
from evalsuite.run.cache.results import ResultStore
from evalsuite.run.pipeline import prepare
from evalsuite.run.slices import slice_index
from evalsuite.run.spec import RunSpec
from evalsuite.sweep import parse_vary, plan_cells, run_sweep
from evalsuite.sweep.compare import cell_statistics
from evalsuite.sweep.reports import slices as sweep_slices

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "sentence_transformers", "faiss", "ranx", "numba", "scipy", "matplotlib")
CHILD = (
    "import sys, json, atexit; from evalsuite.cli import main; "
    f"atexit.register(lambda: print('HEAVY ' + json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))); "
    "sys.exit(main(sys.argv[1:]))"
)


def sweep_args(model: Path, dataset: Path, cache: Path, out: Path) -> list[str]:
    return [
        "sweep",
        *("--model", str(model), "--dataset", str(dataset), "--device", "cpu", "--cache-dir", str(cache)),
        *("--metrics", "ndcg@10,recall@10", "--vary", "pooling=cls,mean,last", "--vary", "dim=32,16", "--grid"),
        *("--out", str(out)),
    ]


def child(args: list[str], cwd: Path) -> tuple[list[str], str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), TQDM_DISABLE="1")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    heavy = next(json.loads(line[6:]) for line in proc.stdout.splitlines() if line.startswith("HEAVY "))
    return heavy, proc.stdout


def comparable(out: Path) -> tuple[dict[str, Any], str, str]:
    """sweep.json, report.md and report.html less what says how this run got there (execution, provenance)."""
    data = json.loads((out / "sweep.json").read_text())
    for key in ("created", "execution"):
        data.pop(key)
    for cell in data["cells"]:
        cell.pop("result_cache")
    md = (out / "report.md").read_text().split("## Execution")[0]
    html = re.sub(r"<h2>Execution</h2>.*?(<h2>|</body>)", r"\1", (out / "report.html").read_text(), flags=re.S)
    return data, md, html


def test_a_warm_sweep_reads_everything_back_and_imports_no_heavy_library(
    tiny_model_dir: Path, minibeir_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    assert main(sweep_args(tiny_model_dir, minibeir_dir, cache, tmp_path / "cold")) == 0
    assert "result cache: 0 of 6 contracts" in capsys.readouterr().out
    embeddings_only = tmp_path / "embeddings-only"
    shutil.copytree(cache, embeddings_only, ignore=shutil.ignore_patterns(resultcache.SUBDIR))

    heavy, printed = child(sweep_args(tiny_model_dir, minibeir_dir, cache, tmp_path / "warm"), tmp_path)
    assert heavy == []
    assert "result cache: 6 of 6 contracts' rankings and scores and 6 of 6 cells' statistics reused" in printed
    assert comparable(tmp_path / "warm") == comparable(tmp_path / "cold")
    warm = json.loads((tmp_path / "warm" / "sweep.json").read_text())
    assert {c["result_cache"]["status"] for c in warm["cells"]} == {"hit"}
    assert warm["execution"]["texts_encoded_by_role"] == {"query": 0, "document": 0}
    assert warm["execution"]["result_cache"]["contracts"] == {"hits": 6, "misses": 0}

    # a damaged plot and slice entry: reported, drawn and compared again, the reports unchanged
    for kind in ("plot", "slice-moves"):
        entry = next((cache / resultcache.SUBDIR).rglob(f"v*/{kind}/*/*.bin"))
        entry.write_bytes(entry.read_bytes()[:-1] + b"?")
    capsys.readouterr()
    assert main(sweep_args(tiny_model_dir, minibeir_dir, cache, tmp_path / "mended")) == 0
    assert capsys.readouterr().err.count("is unusable (checksum mismatch); deleted and recomputed") == 2
    assert comparable(tmp_path / "mended") == comparable(tmp_path / "cold")

    # the same child with the vectors cached but no results: it searches and scores, so the check above can fail
    heavy, printed = child(sweep_args(tiny_model_dir, minibeir_dir, embeddings_only, tmp_path / "again"), tmp_path)
    assert {"faiss", "ranx", "matplotlib"} <= set(heavy) and not {"torch", "transformers"} & set(heavy)
    assert comparable(tmp_path / "again") == comparable(tmp_path / "cold")

    # --no-cache: everything is computed and nothing says it came from a cache
    capsys.readouterr()
    assert main([*sweep_args(tiny_model_dir, minibeir_dir, cache, tmp_path / "off"), "--no-cache"]) == 0
    assert "result cache: off" in capsys.readouterr().out
    off = json.loads((tmp_path / "off" / "sweep.json").read_text())
    assert {c["result_cache"]["status"] for c in off["cells"]} == {"off"}
    assert comparable(tmp_path / "off") == comparable(tmp_path / "cold")


@pytest.fixture(scope="module")
def swept(tiny_model_dir: Path, minibeir_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    spec = RunSpec(
        model=str(tiny_model_dir),
        dataset=str(minibeir_dir),
        device="cpu",
        metrics=("ndcg@10", "recall@10"),
        cache_dir=str(tmp_path_factory.mktemp("cache")),
    )
    prepared = prepare(spec)
    axes = parse_vary(["pooling=cls,mean"])
    result = run_sweep(prepared, plan_cells(prepared.contract, axes, False, info=prepared.model), axes=axes)
    result.base.slices = slice_index(prepared)
    return prepared, result


def _per_query_bumped(per_query: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    out = {m: dict(v) for m, v in per_query.items()}
    q = next(iter(out["ndcg@10"]))
    out["ndcg@10"][q] = 1.0 - out["ndcg@10"][q] / 2
    return out


STAT_CHANGES = {
    "base scores": lambda a: dict(a, base=_per_query_bumped(a["base"])),
    "cell scores": lambda a: dict(a, cell=_per_query_bumped(a["cell"])),
    "metrics": lambda a: dict(a, metrics=("ndcg@10",)),
    "test": lambda a: dict(a, test="fisher"),
    "alpha": lambda a: dict(a, alpha=0.01),
    "same as base": lambda a: dict(a, same_as_base=True),
}


@pytest.mark.parametrize("name", [*STAT_CHANGES, "resamples", "library", "code"])
def test_cell_statistics_miss_on_any_changed_input(
    swept: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    _, result = swept
    cell = next(c for c in result.cells if not c.cell.same_as_base)
    store = ResultStore(tmp_path)
    args: dict[str, Any] = {
        "base": result.base.per_query,
        "cell": cell.result.per_query,
        "metrics": ("ndcg@10", "recall@10"),
        "test": "student",
        "alpha": 0.05,
        "same_as_base": False,
    }

    def stats(a: dict[str, Any], s: ResultStore | None) -> Any:
        return cell_statistics(a["base"], a["cell"], a["metrics"], test=a["test"], alpha=a["alpha"],
                               same_as_base=a["same_as_base"], store=s)  # fmt: skip

    first = stats(args, store)
    assert stats(args, store) == first and store.hits == {"cell-stats": 1}
    if name == "resamples":
        monkeypatch.setattr("evalsuite.scoring.stats.N_RESAMPLES", 999)
    elif name == "library":
        monkeypatch.setattr(resultcache, "library_version", lambda dist: "9.9" if dist == "scipy" else "1")
    elif name == "code":
        monkeypatch.setattr(resultcache, "code_digest", lambda modules: "edited")
    else:
        args = STAT_CHANGES[name](args)
    got, fresh = stats(args, store), stats(args, None)
    assert store.misses == {"cell-stats": 2}, name
    assert got[1] == fresh[1]  # the comparisons (seeded bootstrap and sign flips)
    if args["test"] == "student":  # ranx's Fisher test draws in numba threads: no two runs agree
        assert got[0] == fresh[0]


def test_slice_moves_miss_on_any_changed_input(swept: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prepared, result = swept
    cell = next(c for c in result.cells if not c.cell.same_as_base)
    store = ResultStore(tmp_path)

    def moves(r: Any, c: Any = cell) -> Any:
        return sweep_slices._slice_moves(r, r.base.slices, c)

    base = dataclasses.replace(result, store=store, derived={})
    first = moves(base)
    assert moves(base) == first and store.hits == {"slice-moves": 1}
    changed_base = dataclasses.replace(result.base, per_query=_per_query_bumped(result.base.per_query))
    changed_cell = dataclasses.replace(cell, result=dataclasses.replace(cell.result, per_query=_per_query_bumped(cell.result.per_query)))  # fmt: skip
    other_slices = dataclasses.replace(
        result.base, slices=slice_index(prepared, prepared.contract.replace(max_length=16))
    )
    assert other_slices.slices.reported() != result.base.slices.reported() or any(
        other_slices.slices.members(s) != result.base.slices.members(s) for s in result.base.slices.reported()
    )
    variants = {
        "reference": (dataclasses.replace(base, base=changed_base), cell),
        "candidate": (base, changed_cell),
        "metrics": (dataclasses.replace(base, metrics=("ndcg@10",)), cell),
        "slices": (dataclasses.replace(base, base=other_slices), cell),
    }
    for misses, (name, (r, c)) in enumerate(variants.items(), start=2):
        got = moves(r, c)
        assert store.misses == {"slice-moves": misses}, name
        assert got == moves(dataclasses.replace(r, store=None), c)
    for misses, patch in enumerate(
        (
            ("evalsuite.slicing.compare.MIN_COMPARED", 3),
            ("evalsuite.scoring.stats.N_RESAMPLES", 999),
            ("evalsuite.run.cache.results.library_version", lambda dist: "9.9"),
            ("evalsuite.run.cache.results.code_digest", lambda modules: "edited"),
        ),
        start=len(variants) + 2,
    ):
        with monkeypatch.context() as m:
            m.setattr(*patch)
            moves(base)
        assert store.misses == {"slice-moves": misses}, patch[0]


def test_statistics_of_every_cell_at_once_are_each_cells_own(swept: Any, tmp_path: Path) -> None:
    """cells_statistics (one draw of the resamples for every cell) against cell_statistics cell by cell, with a
    cell equal to the base among them; stored under each cell's own key, read back by either."""
    from evalsuite.sweep.compare import cells_statistics

    _, result = swept
    base, metrics = result.base.per_query, ("ndcg@10", "recall@10")
    cells = [c.result.per_query for c in result.cells] + [_per_query_bumped(result.cells[0].result.per_query), base]
    same = [False] * (len(cells) - 1) + [True]
    alone = [
        cell_statistics(base, c, metrics, test="student", alpha=0.05, same_as_base=s)
        for c, s in zip(cells, same, strict=True)
    ]
    assert cells_statistics(base, cells, metrics, test="student", alpha=0.05, same_as_base=same) == alone
    assert alone[-1][0] == {"ndcg@10": 1.0, "recall@10": 1.0} and alone[0][1] != alone[1][1]
    store = ResultStore(tmp_path)
    first = cell_statistics(base, cells[1], metrics, test="student", alpha=0.05, store=store)
    assert first == alone[1] and store.misses == {"cell-stats": 1}
    got = cells_statistics(base, cells, metrics, test="student", alpha=0.05, same_as_base=same, store=store)
    assert got == alone and store.hits == {"cell-stats": 1} and store.misses == {"cell-stats": 1 + len(cells) - 1}
    for c, s, expected in zip(cells, same, alone, strict=True):
        assert cell_statistics(base, c, metrics, test="student", alpha=0.05, same_as_base=s, store=store) == expected
    assert store.hits == {"cell-stats": 1 + len(cells)}


def test_slice_moves_of_every_cell_at_once_are_each_cells_own_bit_for_bit(swept: Any) -> None:
    """The cells' slice moves computed together (resamples shared by slice size) against stats.compare called
    on each slice, metric and cell alone, on the fixture's real per-query scores."""
    import numpy as np

    from evalsuite.scoring.stats import compare
    from evalsuite.slicing.compare import MIN_COMPARED, slice_moves, slice_moves_each

    _, result = swept
    index, base, metrics = result.base.slices, result.base.per_query, list(result.metrics)
    cells = [c.result.per_query for c in result.cells] + [_per_query_bumped(result.cells[0].result.per_query)]
    together = slice_moves_each(index, cells, base, metrics)
    sizes: list[int] = []
    for cell, moves in zip(cells, together, strict=True):
        expected = []
        for s in index.reported():
            for m in metrics:
                shared = [q for q in index.members(s) if q in cell[m] and q in base[m]]
                if len(shared) >= MIN_COMPARED:
                    a, b = np.array([cell[m][q] for q in shared]), np.array([base[m][q] for q in shared])
                    expected.append((s.text, m, len(shared), float(a.mean()), float(b.mean()), compare(a, b)[0]))
                    sizes.append(len(shared))
        got = [(x.slice, x.metric, x.n_queries, x.candidate, x.reference, x.comparison) for x in moves]
        assert sorted(got, key=repr) == sorted(expected, key=repr)
        assert moves == slice_moves(index, cell, base, metrics)
    # the batch shares: slices of the same size across cells and metrics, and several sizes
    assert len(set(sizes)) >= 3 and len(sizes) >= 2 * len(set(sizes))
    assert any(x.comparison.ci.delta != 0 for moves in together for x in moves)


def _dots(values: list[float], title: str = "t") -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1, 1), dpi=20)
    fig.subplots().plot(values)
    fig.suptitle(title)
    return fig


def _other_dots(values: list[float], title: str = "t") -> Any:
    return _dots(values, title)


def test_plots_are_keyed_by_chart_arguments_libraries_and_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ResultStore(tmp_path)
    uri = chart_uri(store, _dots, [1.0, 2.0], title="a")
    assert uri is not None and uri.startswith("data:image/png;base64,")
    assert chart_uri(store, _dots, [1.0, 2.0], title="a") == uri and store.hits == {"plot": 1}
    assert chart_uri(None, _dots, [1.0, 2.0], title="a") == uri  # the same bytes as drawing it now
    calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = [
        (_other_dots, ([1.0, 2.0],), {"title": "a"}),
        (_dots, ([1.0, 3.0],), {"title": "a"}),
        (_dots, ([1.0, 2.0],), {"title": "b"}),
    ]
    for misses, (chart, args, kwargs) in enumerate(calls, start=2):
        chart_uri(store, chart, *args, **kwargs)
        assert store.misses == {"plot": misses}, (chart, args, kwargs)
    for misses, patch in enumerate(
        (
            ("evalsuite.run.cache.results.library_version", lambda dist: "9.9"),
            ("evalsuite.run.cache.results.code_digest", lambda modules: "edited"),
        ),
        start=len(calls) + 2,
    ):
        with monkeypatch.context() as m:
            m.setattr(*patch)
            chart_uri(store, _dots, [1.0, 2.0], title="a")
        assert store.misses == {"plot": misses}, patch[0]


def _dots_in(values: tuple[float, ...], title: str = "t") -> Any:
    """_dots that records which process drew it (a file named by its pid)."""
    Path(os.environ["DOTS_DRAWN"]).joinpath(str(os.getpid())).write_text("drawn")
    return _dots(list(values), title)


def _broken(values: list[float], title: str = "t") -> Any:
    """A chart whose worker dies (the process exits while drawing); here it draws as _dots."""
    if os.getpid() != int(os.environ["DOTS_PARENT"]):
        os._exit(3)
    return _dots(values, title)


@pytest.mark.skipif(sys.platform != "linux", reason="charts are drawn in forked workers on Linux only")
def test_charts_drawn_in_workers_are_the_bytes_and_cache_entries_chart_uri_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalsuite.reports.html import Charts

    drawn = tmp_path / "drawn"
    drawn.mkdir()
    monkeypatch.setenv("DOTS_DRAWN", str(drawn))
    monkeypatch.setenv("DOTS_PARENT", str(os.getpid()))
    here = {args: chart_uri(None, _dots_in, *args) for args in (((1.0, 2.0), "a"), ((3.0, 1.0), "b"))}
    assert {p.name for p in drawn.iterdir()} == {str(os.getpid())}
    store = ResultStore(tmp_path / "cache")
    with Charts(store, workers=2) as charts:
        for args in here:
            charts.start(_dots_in, *args)
        charts.start(_dots_in, (1.0, 2.0), "a")  # started once
        assert store.misses == {"plot": 2} and not store.hits
        got = {args: charts.uri(_dots_in, *args) for args in here}
        assert charts.uri(_dots_in, [5.0], "c") == chart_uri(None, _dots_in, [5.0], "c")  # not started: drawn here
    assert got == here  # the same PNG bytes as drawn in this process
    workers = {p.name for p in drawn.iterdir()} - {str(os.getpid())}
    assert workers and all(int(pid) != os.getpid() for pid in workers)
    assert store.misses == {"plot": 3}
    # what the workers drew is stored under chart_uri's key: read back here, and started again it is a hit
    assert chart_uri(store, _dots_in, (1.0, 2.0), "a") == here[((1.0, 2.0), "a")] and store.hits == {"plot": 1}
    with Charts(store, workers=2) as charts:
        charts.start(_dots_in, (3.0, 1.0), "b")
        assert charts._pool is None and store.hits == {"plot": 2}  # nothing to draw: no worker forked
        assert charts.uri(_dots_in, (3.0, 1.0), "b") == here[((3.0, 1.0), "b")]
    # a worker that dies: the chart is drawn here instead, and stored
    with Charts(store, workers=2) as charts:
        charts.start(_broken, [7.0], "d")
        assert charts.uri(_broken, [7.0], "d") == chart_uri(None, _dots, [7.0], "d")
    assert chart_uri(store, _broken, [7.0], "d") == chart_uri(None, _dots, [7.0], "d") and store.hits == {"plot": 3}
    # one worker or none: nothing starts early, uri is chart_uri
    with Charts(store, workers=1) as charts:
        charts.start(_dots_in, [9.0], "e")
        assert charts._pool is None and store.misses == {"plot": 4}
        assert charts.uri(_dots_in, [9.0], "e") == chart_uri(None, _dots_in, [9.0], "e")
    assert store.misses == {"plot": 5}
