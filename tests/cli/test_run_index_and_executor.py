"""`evalsuite run --index` and the executor options reach the pipeline; bad combinations stop before encoding."""

import contextlib
import json

import pytest

from evalsuite.cli import main
from evalsuite.testing.builders import run_argv


def _run(tmp_path, model, dataset, *extra):
    return main(run_argv(str(model), str(dataset), "--out", str(tmp_path / "out"), *extra))


def test_an_approximate_index_is_searched_measured_and_named_in_the_manifest(tiny_model_dir, small_beir, tmp_path):
    assert _run(tmp_path, tiny_model_dir, small_beir, "--index", "binary") == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["contract"]["index"] == "binary"
    assert manifest["index"]["spec"] == "binary" and manifest["index"]["effective"]
    assert manifest["index"]["bytes_per_vector"] < 32 * 4  # sign bits, not float32


def test_flat_stays_the_default_and_exact(tiny_model_dir, small_beir, tmp_path):
    assert _run(tmp_path, tiny_model_dir, small_beir) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["contract"]["index"] == "flat" and "effective" not in manifest["index"]


def test_block_wise_run_equals_the_in_memory_run(tiny_model_dir, small_beir, tmp_path):
    assert _run(tmp_path / "a", tiny_model_dir, small_beir) == 0
    assert _run(tmp_path / "b", tiny_model_dir, small_beir, "--chunk-size", "2", "--block-rows", "3") == 0
    a = json.loads((tmp_path / "a" / "out" / "results.json").read_text())
    b = json.loads((tmp_path / "b" / "out" / "results.json").read_text())
    assert a["metrics"] == b["metrics"]
    assert (tmp_path / "a" / "out" / "run.trec").read_text() == (tmp_path / "b" / "out" / "run.trec").read_text()


@pytest.mark.parametrize(
    "extra, words",
    [
        (("--index", "hnsw", "--chunk-size", "10"), "--chunk-size"),
        (("--index", "nonsense"), "index"),
        (("--ray-address", "127.0.0.1:1"), "--executor ray"),
    ],
)
def test_bad_combinations_are_usage_errors(tiny_model_dir, small_beir, tmp_path, capsys, extra, words):
    with pytest.raises(SystemExit) if extra[1] == "nonsense" else contextlib.nullcontext():
        code = _run(tmp_path, tiny_model_dir, small_beir, *extra)
        assert code == 2
    assert words in capsys.readouterr().err
