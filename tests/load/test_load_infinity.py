"""The cutover against two real infinity-emb servers on loopback serving the bundled model: "fast"
(Infinity's default batch size) and "throttled" (``--batch-size 1``). Same model, so quality holds;
the throttled one runs one text per forward pass, so the capacity gates flag it.
"""

from __future__ import annotations

import argparse
import json

import pytest

from evalsuite.jobs import LOAD, add_job

# The same xdist group as the canary's Infinity tests: under `--dist loadgroup` one worker runs them all.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("infinity")]


def load_main(argv):
    parser = argparse.ArgumentParser(prog="evalsuite")
    add_job(parser.add_subparsers(dest="command", required=True), LOAD)
    args = parser.parse_args(["load", *argv])
    return args.func(args)


def test_cutover_flags_the_throttled_infinity_on_capacity_while_quality_holds(
    infinity_pair, load_dataset, tmp_path, capsys
):
    rc = load_main(
        [
            "--dataset",
            str(load_dataset),
            "--device",
            "cpu",
            "--no-cache",
            "--old-endpoint",
            infinity_pair["fast"].url,
            "--endpoint",
            infinity_pair["throttled"].url,
            "--concurrency",
            "1,4",
            "--load-batch-sizes",
            "4",
            "--requests",
            "16",  # 4 requests a level let one slow first request decide throughput on a loaded machine
            "--roles",
            "query",
            "--endpoint-timeout",
            "60",
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 1, out
    cut = json.loads((tmp_path / "load.json").read_text())["cutover"]
    assert cut["quality_holds"] is True, cut["quality"]
    assert all(abs(q["delta"]) <= 0.005 for q in cut["quality"])
    gates = {g["gate"]: g for g in cut["gates"]}
    assert gates["throughput:max_rel_drop=10%"]["passed"] is False, out
    assert cut["stands"] is False and "capacity fails" in cut["verdict"]
    assert "data:image/png;base64," in (tmp_path / "report.html").read_text()
