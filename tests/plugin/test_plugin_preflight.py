"""The plugin stops with pytest's usage error (exit 4), one line naming the path or gate and what to do,
before any model is loaded, for bad paths and for gates on metrics that are not computed."""

from __future__ import annotations

import pytest

from tests.privileges import read_only_dir

from .conftest import BASE, plugin_args


def _args(tiny, small_beir, *extra):
    return plugin_args(tiny[0], small_beir, *extra, no_cache=False)


@pytest.fixture
def no_model(monkeypatch):
    """Fault injection: loading the local model fails; the runs are in-process, so this reaches them."""
    import evalsuite.encode.local as local

    calls: list[object] = []

    def forbidden(self, *a, **k):
        calls.append(a)
        raise AssertionError("the model was loaded although the session had to stop before encoding")

    monkeypatch.setattr(local.LocalEncoder, "__init__", forbidden)
    return calls


def _usage_error(run, pytester, *needles):
    result = run.result
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    err = result.stderr.str()
    assert "Traceback" not in err + result.stdout.str()
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ERROR: evalsuite: "), err
    for needle in needles:
        assert needle in lines[0], (needle, err)
    assert run.report is None and not (pytester.path / "reports").exists()  # nothing computed or written


def test_gate_on_a_metric_not_computed(run_evalsuite, pytester, tiny, small_beir, no_model):
    run = run_evalsuite(*_args(tiny, small_beir, "--no-cache", "--metrics", "ndcg@10", "--gate", "recall@1000>=0.5"))
    _usage_error(
        run,
        pytester,
        "'recall@1000>=0.5' needs recall@1000, which is not computed",
        "add it to --metrics (computed: ndcg@10)",
    )
    assert not no_model


def test_gate_in_spec_file_on_a_metric_not_computed(run_evalsuite, pytester, tiny, small_beir, no_model):
    model, rev = tiny
    pytester.makefile(
        ".toml",
        evalsuite=f"""
model = "{model}"
model_rev = "{rev}"
device = "cpu"
use_cache = false
metrics = ["ndcg@10"]

[[datasets]]
name = "first"
path = "{small_beir}"
gates = ["ndcg@10>=0.0", "mrr@10>=0.1"]
""",
    )
    run = run_evalsuite(*BASE)
    _usage_error(run, pytester, "first: gate 'mrr@10>=0.1' needs mrr@10")
    assert not no_model


def test_gate_on_a_metric_the_baseline_lacks(run_evalsuite, pytester, tiny, small_beir):
    baseline = pytester.path / "b.json"
    first = run_evalsuite(
        *_args(tiny, small_beir, "--no-cache", "--metrics", "ndcg@10", "--update-baseline", "--baseline", str(baseline))
    )
    first.result.assert_outcomes(passed=2)
    import shutil

    shutil.rmtree(pytester.path / "reports")
    run = run_evalsuite(
        *_args(
            tiny,
            small_beir,
            "--no-cache",
            "--metrics",
            "ndcg@10,mrr@10",
            "--baseline",
            str(baseline),
            "--gate",
            "mrr@10:max_drop=0.01",
        )
    )
    _usage_error(
        run,
        pytester,
        f"'mrr@10:max_drop=0.01' needs mrr@10, which the baseline {baseline} does not hold",
        "--update-baseline",
    )


def test_update_baseline_into_an_unwritable_place(run_evalsuite, pytester, tiny, small_beir, no_model):
    blocker = pytester.path / "file"
    blocker.write_text("")
    for path, needle in (
        (blocker / "b.json", f"its directory {blocker} exists and is not a directory"),
        (blocker / "sub" / "b.json", f"{blocker} is a file"),
        ("/proc/b.json", "its directory /proc is not writable"),
        (pytester.path, "is a directory"),
    ):
        run = run_evalsuite(*_args(tiny, small_beir, "--no-cache", "--update-baseline", "--baseline", str(path)))
        _usage_error(run, pytester, f"baseline {path}", needle)
    assert not no_model


def test_baseline_that_is_a_directory(run_evalsuite, pytester, tiny, small_beir, no_model):
    run = run_evalsuite(*_args(tiny, small_beir, "--no-cache", "--baseline", str(pytester.path)))
    _usage_error(run, pytester, f"baseline {pytester.path}: is a directory")


def test_reports_dir_and_cache_dir(run_evalsuite, pytester, tiny, small_beir, no_model):
    blocker = pytester.path / "file"
    blocker.write_text("")
    run = run_evalsuite(*_args(tiny, small_beir, "--no-cache", "--gate", "ndcg@10>=0", "--reports-dir", str(blocker)))
    _usage_error(run, pytester, f"--reports-dir {blocker}: exists and is not a directory")
    run = run_evalsuite(*_args(tiny, small_beir, "--no-cache", "--reports-dir", "/proc/evalsuite-reports"))
    _usage_error(run, pytester, "--reports-dir /proc/evalsuite-reports", "/proc is not writable")
    for cache in (blocker, blocker / "sub"):
        run = run_evalsuite(*_args(tiny, small_beir, "--cache-dir", str(cache), "--gate", "ndcg@10>=0"))
        _usage_error(run, pytester, f"(--cache-dir) {cache}", "or --no-cache")
    assert not no_model


def test_qrels_missing_or_a_directory(run_evalsuite, pytester, tiny, small_beir, no_model):
    for qrels, needle in (
        (pytester.path / "nope.tsv", "qrels file not found"),
        (pytester.path, "--qrels names a directory"),
    ):
        run = run_evalsuite(*_args(tiny, small_beir, "--no-cache", "--qrels", str(qrels)))
        _usage_error(run, pytester, str(qrels), needle)
    assert not no_model


def test_update_baseline_into_a_read_only_directory(run_evalsuite, pytester, tiny, small_beir, no_model):
    with read_only_dir(pytester.path / "ro") as ro:  # immutable for root (chattr +i), mode 0o500 for others
        run = run_evalsuite(
            *_args(tiny, small_beir, "--no-cache", "--update-baseline", "--baseline", str(ro / "b.json"))
        )
        _usage_error(run, pytester, f"baseline {ro / 'b.json'}", f"its directory {ro} is not writable")


def test_spec_file_and_baseline_that_are_not_utf8(run_evalsuite, pytester, tiny, small_beir, no_model):
    (pytester.path / "b.json").write_bytes(b'{"schema_version": 1, "x": "\xff\xfe"}')
    run = run_evalsuite(*_args(tiny, small_beir, "--no-cache", "--baseline", "b.json"))
    _usage_error(run, pytester, "b.json: baseline is not UTF-8 JSON", "--update-baseline")
    (pytester.path / "evalsuite.toml").write_bytes(b'model = "\xff"\n')
    run = run_evalsuite(*BASE)
    _usage_error(run, pytester, "evalsuite.toml: not UTF-8 text", "save the spec file as UTF-8")


def test_reports_that_cannot_be_written_at_the_end(run_evalsuite, pytester, tiny, small_beir):
    """A report path blocked after the start-up check (here: results.json is a directory) is one line, not a
    traceback, and the session does not exit 0."""
    blocked = pytester.path / "reports" / "evalsuite" / "small" / "results.json"
    blocked.mkdir(parents=True)
    run = run_evalsuite(*_args(tiny, small_beir, "--no-cache", "--gate", "ndcg@10>=0"))
    out = run.result.stdout.str()
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "Traceback" not in out + run.result.stderr.str() and "INTERNALERROR" not in out
    assert f"evalsuite: error: {blocked}" in out and "not all reports were written" in out


def test_a_spec_value_of_the_wrong_type_is_a_usage_error(run_evalsuite, pytester, no_model):
    """Not an INTERNALERROR: exit 4 and one line naming the file, the key and the type it wants."""
    (pytester.path / "evalsuite.toml").write_text('metrics = 10\n[[datasets]]\npath = "bundled"\n')
    run = run_evalsuite(*BASE)
    _usage_error(run, pytester, "evalsuite.toml: metrics must be a list of strings, got a number (10)")
