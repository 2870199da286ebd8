"""bench/gpu_check.py on CPU: the judgements and the report (pure), the sections on the tiny random BERT
with device "cpu", and the no-CUDA exit. The GPU run itself exercises only the device."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from gpu_check import build_parser, run_sections
from gpu_judge import (
    SweepFigures,
    compare_rankings,
    cosine_stats,
    judge_runs,
    judge_sweep,
    judge_vectors,
    one_gpu_env,
    ray_skip_reason,
)
from gpu_report import (
    Section,
    Thresholds,
    assemble,
    at_least,
    at_most,
    equals,
    exit_status,
    finish,
    json_text,
    no_cuda_message,
    render_table,
    skipped,
)
from gpu_sections import (
    Context,
    cli_run,
    ray_executor_modules,
    section_faiss,
    section_ray,
    section_run,
    section_vectors,
)
from gpu_sweep import section_sweep

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_check.py"
T = Thresholds()


def at_cosine(ref: np.ndarray, cos: np.ndarray, seed: int = 1) -> np.ndarray:
    """Rows whose cosine with ``ref``'s rows is exactly ``cos`` (an orthogonal part mixed in)."""
    rng = np.random.default_rng(seed)
    u = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    w = rng.standard_normal(ref.shape)
    w -= (w * u).sum(axis=1, keepdims=True) * u
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    return cos[:, None] * u + np.sqrt(1 - cos[:, None] ** 2) * w


@pytest.fixture(scope="module")
def ref() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((50, 24))


# -- checks and cosine statistics -----------------------------------------------------------------------
def test_checks_never_pass_on_missing_or_non_finite_values():
    assert at_least("x", 0.5, 0.4).passed and not at_least("x", 0.3, 0.4).passed
    assert at_most("x", 0.4, 0.4).passed and not at_most("x", 0.41, 0.4).passed
    for bad in (None, float("nan"), float("inf"), True):
        assert not at_least("x", bad, 0.0).passed and not at_most("x", bad, 1.0).passed
    assert not equals("x", None, None).passed and equals("device", "cuda", "cuda").passed


def test_cosine_stats_match_an_independent_computation(ref):
    target = np.linspace(0.95, 0.999, len(ref))
    st = cosine_stats(ref, at_cosine(ref, target) * 3.0)  # scale must not matter
    assert st.min == pytest.approx(0.95, abs=1e-9) and st.worst_row == 0
    assert st.median == pytest.approx(np.median(target), abs=1e-9) and st.non_finite_rows == 0


def test_cosine_stats_flag_nan_and_zero_rows_and_reject_shape_mismatch(ref):
    got = ref.copy()
    got[7] = np.nan
    got[9] = 0.0
    st = cosine_stats(ref, got)
    assert (st.min, st.median, st.worst_row, st.non_finite_rows) == (None, None, 7, 2)
    with pytest.raises(ValueError, match="shapes differ"):
        cosine_stats(ref, ref[:, :10])


def test_judge_vectors_applies_each_dtypes_threshold(ref):
    # cosine 0.995: within bfloat16's 0.99, not float16's 0.999 nor float32's 0.9999
    at_995 = at_cosine(ref, np.full(len(ref), 0.995))
    s = judge_vectors(ref, {"float32": ref.copy(), "float16": at_995, "bfloat16": at_995}, T)
    assert s.status == "fail"
    assert [c.name for c in s.failed_checks] == ["float16.min_cosine"]
    assert s.data["float32"]["min"] == pytest.approx(1.0) and s.data["bfloat16"]["min"] == pytest.approx(0.995)


def test_judge_vectors_fails_one_perturbed_row_and_a_wrong_device(ref):
    got = ref.copy()
    got[13] = np.random.default_rng(5).standard_normal(ref.shape[1])
    s = judge_vectors(ref, {"float32": got}, T)
    assert s.status == "fail" and s.data["float32"]["worst_row"] == 13
    ok = judge_vectors(ref, {"float32": ref}, T, devices={"float32": "cpu"}, want_device="cuda")
    assert [c.name for c in ok.failed_checks] == ["float32.device"]
    assert judge_vectors(ref, {"float32": ref}, T, devices={"float32": "cuda:1"}, want_device="cuda").status == "pass"


# -- runs, sweep, Ray -----------------------------------------------------------------------------------
REF_METRICS = {"ndcg@10": 0.5, "recall@100": 0.9}


def test_judge_runs_tolerance_per_dtype_and_device():
    runs = {
        "float32": ("cuda:0", {"ndcg@10": 0.5005, "recall@100": 0.9}),
        "float16": ("cuda", {"ndcg@10": 0.506, "recall@100": 0.9}),  # 0.006 > 0.005
        "bfloat16": ("cuda", {"ndcg@10": 0.494, "recall@100": 0.9}),
    }  # 0.006 <= 0.01
    s = judge_runs(REF_METRICS, runs, T)
    assert [c.name for c in s.failed_checks] == ["float16.max_abs_metric_delta"]
    assert s.data["float16"]["deltas"]["ndcg@10"] == pytest.approx(0.006)
    cpu = judge_runs(REF_METRICS, {"float32": ("cpu", dict(REF_METRICS))}, T)
    assert [c.name for c in cpu.failed_checks] == ["float32.device"]
    missing = judge_runs(REF_METRICS, {"float32": ("cuda", {"ndcg@10": 0.5})}, T)
    assert [c.name for c in missing.failed_checks] == ["float32.max_abs_metric_delta"]


def figures(**changes) -> SweepFigures:
    base = SweepFigures(
        cells=12,
        expected_cells=12,
        passes_by_role={"query": 1, "document": 1},
        device="cuda",
        tokens=60_000,
        sweep_seconds=2.4,
        st_seconds=2.0,
        sweep_peak_bytes=300 * 2**20,
        st_peak_bytes=250 * 2**20,
    )
    return dataclasses.replace(base, **changes)


def test_judge_sweep_ratio_tokens_per_second_and_memory():
    s = judge_sweep(figures(), T)
    assert s.status == "pass"
    assert s.data["time_ratio"] == pytest.approx(1.2) and s.data["memory_ratio"] == pytest.approx(1.2)
    assert s.data["sweep_tokens_per_second"] == pytest.approx(25_000)
    assert s.data["st_tokens_per_second"] == pytest.approx(30_000)
    assert "1.20x" in s.summary and "300 vs 250 MB" in s.summary
    assert [c.name for c in judge_sweep(figures(sweep_seconds=2.8), T).failed_checks] == ["time_ratio_sweep_over_st"]
    assert [c.name for c in judge_sweep(figures(sweep_peak_bytes=None), T).failed_checks] == [
        "peak_memory_ratio_sweep_over_st"
    ]
    bad = judge_sweep(figures(cells=11, passes_by_role={"query": 2, "document": 1}), T)
    assert [c.name for c in bad.failed_checks] == ["cells", "query_forward_passes"]


def test_ray_skip_reasons_and_one_gpu_environment():
    assert ray_skip_reason([], True, True) == "no Ray executor in this evalsuite"
    assert "--executor" in ray_skip_reason(["evalsuite.encode.ray"], True, False)
    assert "not installed" in ray_skip_reason(["evalsuite.encode.ray"], False, True)
    assert ray_skip_reason(["evalsuite.encode.ray"], True, True) is None
    env = {"PATH": "/bin"}
    assert one_gpu_env(env, 1) == {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "1"} and env == {"PATH": "/bin"}
    assert one_gpu_env({"CUDA_VISIBLE_DEVICES": "3,5"}, 1)["CUDA_VISIBLE_DEVICES"] == "5"


# -- search agreement -----------------------------------------------------------------------------------
def test_compare_rankings_allows_tie_order_only():
    s = np.array([[0.9, 0.8, 0.8, 0.7, 0.6]], dtype=np.float32)
    ids = np.array([[1, 2, 3, 4, 5]])
    assert compare_rankings(s, ids, s, ids, 1e-4).mismatched_queries == 0
    assert compare_rankings(s, ids, s, np.array([[1, 3, 2, 4, 5]]), 1e-4).mismatched_queries == 0  # tie swapped
    assert compare_rankings(s, ids, s, np.array([[2, 1, 3, 4, 5]]), 1e-4).mismatched_queries == 1  # not a tie
    assert compare_rankings(s, ids, s, np.array([[1, 2, 3, 4, 9]]), 1e-4).mismatched_queries == 0  # past rank k
    assert compare_rankings(s, ids, s, np.array([[1, 2, 3, 9, 5]]), 1e-4).mismatched_queries == 1
    off = s + np.array([[0, 0, 0, 0.01, 0]], dtype=np.float32)
    a = compare_rankings(s, ids, off, ids, 1e-4)
    assert a.mismatched_queries == 1 and a.max_score_diff == pytest.approx(0.01, abs=1e-6)
    with pytest.raises(ValueError, match="shape"):
        compare_rankings(s, ids, s[:, :3], ids[:, :3], 1e-4)


def test_compare_rankings_agrees_on_faiss_and_an_independent_numpy_search():
    from evalsuite.retrieval.search import build_index

    rng = np.random.default_rng(3)
    docs = rng.standard_normal((2000, 32)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = docs[:40] + 0.2 * rng.standard_normal((40, 32)).astype(np.float32)
    scores, ids = build_index(docs, "cosine").search(queries, 50)
    sims = queries.astype(np.float64) @ docs.T.astype(np.float64)
    order = np.argsort(-sims, axis=1, kind="stable")[:, :50]
    a = compare_rankings(scores, ids, np.take_along_axis(sims, order, 1), order, 1e-4)
    assert (a.queries, a.mismatched_queries) == (40, 0) and a.max_score_diff < 1e-5
    shuffled = order.copy()
    shuffled[5, [0, 10]] = shuffled[5, [10, 0]]
    assert compare_rankings(scores, ids, np.take_along_axis(sims, order, 1), shuffled, 1e-4).first_mismatch == 5


# -- report, table, exit status -------------------------------------------------------------------------
def test_report_is_strict_json_with_status_and_table_names_failures():
    passed = finish(
        "vectors",
        [at_least("float32.min_cosine", 0.99999, 0.9999)],
        "float32 min 0.99999",
        {"float32": {"min": float("nan"), "n": np.int64(3)}},
    )
    failed = finish("run", [equals("float16.device", "cpu", "cuda")], "float16 on cpu")
    skip = skipped("ray", "no Ray executor in this evalsuite")
    assert (exit_status([passed, skip]), exit_status([passed, failed]), exit_status([Section("x", "error", "")])) == (
        0,
        1,
        1,
    )
    assert finish("empty", [], "").status == "fail"
    report = assemble(
        {"gpu": "test"}, [passed, failed, skip], T, command=["gpu_check.py"], created="now", seconds=1.234
    )
    text = json_text(report)
    data = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert data["passed"] is False and data["exit_status"] == 1
    assert data["sections"]["vectors"]["data"]["float32"] == {"min": None, "n": 3}
    assert data["sections"]["ray"] == {
        "status": "skipped",
        "summary": "skipped: no Ray executor in this evalsuite",
        "seconds": None,
        "checks": [],
        "data": {},
    }
    assert data["thresholds"]["min_cosine"] == {"float32": 0.9999, "float16": 0.999, "bfloat16": 0.99}
    table = render_table([passed, failed, skip], "GPU check on test")
    assert "run      fail" in table and "skipped: no Ray executor in this evalsuite" in table
    assert "  run: float16.device = 'cpu' (want == cuda)" in table
    assert table.splitlines()[-1] == "GPU CHECK FAILED (1 skipped: ray)"
    assert render_table([passed, skip], "t").splitlines()[-1] == "all checks passed (1 skipped: ray)"


def test_run_sections_turns_an_exception_into_an_error_and_goes_on(tmp_path):
    seen = []

    def boom(ctx: Context) -> Section:
        raise RuntimeError("device fell over")

    table = {"a": boom, "b": lambda ctx: finish("b", [equals("x", 1, 1)], "ok")}
    out = run_sections(["a", "b"], Context(workdir=tmp_path, device="cpu"), sections=table, log=seen.append)
    assert [(s.name, s.status) for s in out] == [("a", "error"), ("b", "pass")]
    assert out[0].summary == "error: RuntimeError: device fell over" and "boom" in out[0].data["traceback"]
    assert seen == out and all(s.seconds is not None for s in out)


def test_main_writes_the_json_and_the_table_and_returns_the_verdict(tmp_path, monkeypatch, capsys):
    """The orchestration of main() with CUDA pretended and two stand-in sections (the real ones are tested
    below on CPU): the report file, the printed table and the exit status."""
    import gpu_check
    import torch

    sections = {
        "good": lambda ctx: finish("good", [at_least("cos", 1.0, 0.9999)], "fine"),
        "bad": lambda ctx: finish("bad", [at_most("ratio", 2.0, 1.3)], "slow"),
    }
    monkeypatch.setattr(gpu_check, "SECTIONS", sections)
    monkeypatch.setattr(gpu_check, "environment", lambda device: {"gpu": "Stand-in GPU", "torch": "t", "cuda": "c"})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "TQDM_DISABLE"):
        monkeypatch.setenv(var, "1")  # main() sets these for its process; keep this one as it was
    out = tmp_path / "deep" / "gpu.json"
    assert gpu_check.main(["--out", str(out), "--sections", "good"]) == 0
    assert gpu_check.main(["--out", str(out), "--sections", "good,bad"]) == 1
    report = json.loads(out.read_text())
    assert report["exit_status"] == 1 and list(report["sections"]) == ["good", "bad"]
    assert report["environment"]["gpu"] == "Stand-in GPU" and report["command"][-1] == "good,bad"
    printed = capsys.readouterr().out
    assert "  bad: ratio = 2 (want <= 1.3)" in printed and printed.rstrip().endswith(f"wrote {out}")
    assert gpu_check.main(["--out", str(tmp_path / "x.json"), "--device", "cuda:3"]) == 2
    assert not (tmp_path / "x.json").exists()


def test_bad_arguments_exit_2():
    for argv in (["--sections", "vectors,nope"], ["--repeat", "0"], ["--sweep-docs", "-1"]):
        with pytest.raises(SystemExit) as exc:
            build_parser().parse_args(argv)
        assert exc.value.code == 2
    assert build_parser().parse_args(["--sections", "run, sweep"]).sections == ("run", "sweep")


# -- the sections on CPU, tiny model ----------------------------------------------------------------------
@pytest.fixture
def cpu_ctx(tmp_path, tiny_model_dir, small_beir) -> Context:
    return Context(
        workdir=tmp_path,
        device="cpu",
        model=str(tiny_model_dir),
        dataset=str(small_beir),
        dtypes=("float32",),
        sweep_docs=0,
        repeat=1,
        dims=(32, 16, 8, 4),
    )


def test_vectors_section_cpu_against_cpu_passes(cpu_ctx):
    s = section_vectors(cpu_ctx)  # 3 queries (q4 has no relevant document: dropped) and 6 documents
    assert s.status == "pass", s.failed_checks
    assert s.data["texts"] == 3 + 6 and s.data["float32"]["min"] >= 0.9999 and s.data["float32"]["device"] == "cpu"


def test_run_section_fails_when_auto_does_not_pick_a_gpu(cpu_ctx):
    s = section_run(cpu_ctx)
    assert [c.name for c in s.failed_checks] == ["float32.device"]  # --device auto picked cpu here
    assert s.data["float32"]["device"] == "cpu"
    assert s.data["float32"]["deltas"] == {m: 0.0 for m in s.data["reference_cpu_float32"]}
    assert set(s.data["reference_cpu_float32"]) == {"ndcg@10", "recall@10", "recall@100", "mrr@10"}


def test_sweep_section_runs_twelve_cells_beside_sentence_transformers(cpu_ctx):
    pytest.importorskip("sentence_transformers")
    s = section_sweep(cpu_ctx)
    # on CPU the device and the GPU memory checks fail; the time ratio means nothing on the tiny model
    failed = {c.name for c in s.failed_checks}
    assert (
        {"device", "peak_memory_ratio_sweep_over_st"}
        <= failed
        <= {"device", "peak_memory_ratio_sweep_over_st", "time_ratio_sweep_over_st"}
    )
    assert s.data["cells"] == 12 and s.data["passes_by_role"] == {"query": 1, "document": 1}
    assert s.data["tokens"] > 0 and s.data["st_seconds"] > 0 and s.data["time_ratio"] > 0
    assert (s.data["documents"], s.data["queries"]) == (6, 3)  # q4 has no relevant document: dropped


def test_cli_run_reports_a_rejected_command_instead_of_exiting(cpu_ctx):
    rc, results, output = cli_run(cpu_ctx, ["--dtype", "float64"], cpu_ctx.workdir / "never")
    assert (rc, results) == (2, None) and "invalid choice: 'float64'" in output


def test_ray_and_faiss_sections_skip_with_a_reason_where_they_cannot_run(cpu_ctx):
    import faiss

    if not ray_executor_modules():
        assert section_ray(cpu_ctx) == skipped("ray", "no Ray executor in this evalsuite")
    if not hasattr(faiss, "StandardGpuResources"):
        s = section_faiss(cpu_ctx)
        assert s.status == "skipped" and "faiss-gpu is not installed" in s.summary


# -- no CUDA --------------------------------------------------------------------------------------------
def test_no_cuda_message_names_the_build():
    assert "(torch 2.13.0+cpu, built for CPU)" in no_cuda_message("2.13.0+cpu", None)
    msg = no_cuda_message("2.13.0+cu128", "12.8")
    assert msg.startswith(
        "no CUDA device: torch.cuda.is_available() is False (torch 2.13.0+cu128, built for "
        "CUDA 12.8); run on a CUDA machine after `TORCH_SPEC="
    )
    assert "bash scripts/bootstrap.sh`" in msg


def test_without_cuda_it_exits_2_at_once_having_written_and_imported_nothing_heavy(tmp_path):
    out = tmp_path / "gpu.json"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # no GPU even on a CUDA machine
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(SCRIPT), "--out", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    seconds = time.perf_counter() - t0
    assert proc.returncode == 2, proc.stderr[-2000:]
    message = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert len(message) == 1 and message[0].startswith(
        "gpu_check: no CUDA device: torch.cuda.is_available() is False (torch "
    )
    assert proc.stdout == "" and not out.exists() and not (tmp_path / "reports").exists()
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "torch" in imported
    assert not imported & {"transformers", "faiss", "evalsuite", "sentence_transformers", "ranx", "ray"}
    assert seconds < 20
