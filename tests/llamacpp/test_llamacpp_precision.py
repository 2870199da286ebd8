"""Reduced precision against a real llama-cpp-python server: the f32 GGUF quantized to q4_0 by llama.cpp's own
quantizer (see conftest), otherwise the faithful configuration.

Its vectors depart from the reference's on every text (cosine 0.88-0.98 here, median 0.97), where no alternative
reproduces them: the canary fails ``vector_agreement`` and the diagnosis names reduced precision with the measured
cosine and llama-cpp-python's remedy. The f16 file stays within every tolerance (test_llamacpp_canary.py).
One-line bugs caught: the precision judgement never reached by the canary (the diagnosis says "no hypothesis
explains"), its cosine not the served vectors' own, or its remedy not llama-cpp-python's.
"""

from __future__ import annotations

import json

import pytest

from evalsuite.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.llamacpp, pytest.mark.xdist_group("llamacpp")]


def test_a_q4_0_file_is_named_precision_with_its_cosine_and_remedy(
    llamacpp_q4_0, small_beir, tmp_path, reference_cache, capsys
):
    argv = ["canary", "--endpoint", llamacpp_q4_0, "--dataset", str(small_beir), "--device", "cpu"]
    argv += ["--cache-dir", str(reference_cache), "--out", str(tmp_path), "--no-normalize", "--canary-detect", "0.5"]
    rc = main(argv)
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "canary.json").read_text())
    verdicts = {v["check"]: v for v in report["verdicts"]}
    assert rc == 1, out
    agreement = verdicts["vector_agreement"]
    assert agreement["passed"] is False, out
    measured = agreement["details"]["min"]  # the check's own cosine over the canary texts
    assert 0.8 <= measured < 0.99, agreement["details"]
    [diagnosis] = report["diagnosis"]
    assert diagnosis["engine"] == "llama-cpp-python", diagnosis
    [cause] = diagnosis["causes"]
    assert (cause["factor"], cause["stage"]) == ("precision", "batch"), out
    # the cosine named is the served vectors' own (the diagnosis also sees the over-long probe: at most as high)
    assert cause["value"] <= round(measured, 4) + 1e-4 and cause["value"] == pytest.approx(measured, abs=0.02)
    evidence = diagnosis["precision"]
    assert evidence["median_cosine"] >= 0.95 and evidence["evenness"] >= 0.25, evidence
    assert diagnosis["ranked"][0]["hypothesis"] == "the contract"  # no alternative (dtypes, lengths...) fits better
    assert f"lower precision than the reference's (min cosine {cause['value']})" in out, out
    assert "llama-cpp-python: serve the f32 GGUF" in out and "not a quantized one" in out, out
    batch = next(link for link in report["triage"] if link["stage"] == "batch")
    assert batch["status"] == "FAIL" and any("lower precision" in e for e in batch["evidence"]), batch


def test_verify_names_the_q4_0_files_precision_without_the_model(llamacpp_q4_0, small_beir, tmp_path, capsys):
    """`verify` against the raw-vector manifest: the fingerprint's 8 probe texts depart evenly too."""
    run = ["run", "--dataset", str(small_beir), "--device", "cpu", "--no-normalize", "--no-cache"]
    assert main([*run, "--out", str(tmp_path / "raw")]) == 0
    capsys.readouterr()
    rc = main(["verify", "--manifest", str(tmp_path / "raw" / "manifest.json"), "--endpoint", llamacpp_q4_0])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "cause: the served vectors are made at lower precision than the reference's (min cosine 0." in out, out
    assert "llama-cpp-python: serve the f32 GGUF" in out, out
