import json

import pytest

from evalsuite.cli import main
from evalsuite.testing.builders import run_argv


def test_sweep_command_writes_reports(tiny_model_dir, minibeir_dir, tmp_path, capsys):
    out = tmp_path / "sweep"
    code = main(
        run_argv(
            str(tiny_model_dir),
            str(minibeir_dir),
            "--metrics",
            "ndcg@10",
            "--vary",
            "pooling=cls,last",
            "--vary",
            "dim=16",
            "--out",
            str(out),
            command="sweep",
            cache_dir=str(tmp_path / "cache"),
        )
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "forward passes 1 query + 1 document" in text and "pooling=last" in text and "dim=16" in text
    data = json.loads((out / "sweep.json").read_text())
    assert [c["name"] for c in data["cells"]] == ["pooling=cls", "pooling=last", "dim=16"]
    assert (out / "report.md").is_file() and (out / "report.html").is_file()


def test_bad_vary_is_rejected_at_parse_time(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "--vary", "pooling=median"])
    assert exc.value.code == 2
    assert "'median' is not valid; choose from cls, mean, last, max" in capsys.readouterr().err


def test_grid_conflict_is_a_clean_error(tiny_model_dir, minibeir_dir, tmp_path, capsys):
    code = main(
        [
            "sweep",
            "--model",
            str(tiny_model_dir),
            "--dataset",
            str(minibeir_dir),
            "--no-cache",
            "--vary",
            "query_prefix=none",
            "--vary",
            "prefixes=swapped",
            "--grid",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 2
    assert "cannot cross query_prefix with prefixes" in capsys.readouterr().err
