"""The load runner against slow and failing servers on loopback, and the local reference target."""

from __future__ import annotations

import itertools

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.encode.endpoint import EndpointConfig
from evalsuite.load.runner import LoadPlan, run_load
from evalsuite.load.targets import EndpointTarget, local_target
from evalsuite.load.workload import Workload, dataset_workload


@pytest.fixture
def workload():
    texts = [f"text number {i} " + "word " * (i % 50) for i in range(40)]
    return Workload(tuple(texts), tuple(3 + (i % 50) for i in range(40)), max_length=32)


def target(name, server, top=8):
    return EndpointTarget(name, EndpointConfig(server.url, timeout=5.0), dim=32, normalized=True, max_concurrency=top)


def test_levels_reach_their_concurrency_and_count_everything(fake_server, workload):
    server = fake_server(delay=0.02)
    t = target("server", server)
    plan = LoadPlan(concurrency=(1, 4), batch_sizes=(3,), requests=12, warmup=1)
    profile = run_load([t], workload, plan)
    t.close()
    assert [(lv.batch_size, lv.concurrency) for lv in profile.levels] == [(3, 1), (3, 4)]
    assert server.count == 1 + 12 + 12  # warmup, then both levels
    assert server.max_in_flight == 4
    one, four = profile.levels
    for lv in (one, four):
        assert lv.figures.requests == lv.figures.ok == 12 and lv.figures.inputs == 36
        assert lv.figures.p50_ms >= 20.0  # the server's own delay
        assert sum(b.ok for b in lv.buckets.values()) == 12
    assert four.figures.inputs_per_s > 2.0 * one.figures.inputs_per_s  # four in flight overlap the delay
    # tokens are the processed tokens (truncated at max_length) of what the server received
    tokens_of = dict(zip(workload.texts, workload.tokens, strict=True))
    sent = server.inputs[1:13]  # after the warmup request, the first level (one in flight: in order)
    assert one.figures.tokens == sum(min(tokens_of[t], 32) for texts in sent for t in texts)
    assert any(tokens_of[t] > 32 for texts in sent for t in texts)  # truncation was exercised


def test_429_and_errors_are_counted_not_retried(fake_server, workload):
    server = fake_server()
    server.statuses = [200, 429, 500, 200]
    t = target("server", server)
    profile = run_load([t], workload, LoadPlan(concurrency=(1,), batch_sizes=(2,), requests=8, warmup=0))
    t.close()
    f = profile.levels[0].figures
    assert server.count == 8  # no retry
    assert (f.ok, f.throttled, f.errors) == (4, 2, 2)
    assert f.error_rate == 0.5
    assert "HTTP 500" in profile.levels[0].first_errors[0]


def test_malformed_vectors_count_as_errors(fake_server, workload):
    server = fake_server(dim=16)  # the contract says 32
    t = target("server", server)
    profile = run_load([t], workload, LoadPlan(concurrency=(2,), batch_sizes=(2,), requests=4, warmup=0))
    t.close()
    assert profile.levels[0].figures.errors == 4 and profile.levels[0].figures.ok == 0


def test_targets_are_interleaved_and_get_the_same_requests(fake_server, workload):
    a, b = fake_server(delay=0.005), fake_server(delay=0.005)
    ta, tb = target("a", a), target("b", b)
    run_load([ta, tb], workload, LoadPlan(concurrency=(1,), batch_sizes=(2,), requests=8, rounds=4, warmup=0))
    ta.close(), tb.close()
    events = sorted([(t, "a") for t in a.arrivals] + [(t, "b") for t in b.arrivals])
    order = [name for _, name in events]
    runs = [order[0]] + [n for prev, n in itertools.pairwise(order) if n != prev]
    assert runs == ["a", "b", "a", "b", "a"]  # rounds a b | b a | a b | b a: slices meet at the seams
    assert len(a.arrivals) == len(b.arrivals) == 8
    assert sorted(a.inputs) == sorted(b.inputs)  # identical requests


def test_duration_mode_runs_for_about_its_time(fake_server, workload):
    server = fake_server(delay=0.01)
    t = target("server", server)
    profile = run_load(
        [t], workload, LoadPlan(concurrency=(2,), batch_sizes=(1,), requests=None, duration=0.4, warmup=0)
    )
    t.close()
    f = profile.levels[0].figures
    assert 0.35 <= f.wall_seconds <= 1.0
    assert f.ok >= 10


def test_plan_validation():
    with pytest.raises(SpecError, match="not both"):
        LoadPlan(requests=5, duration=1.0)
    with pytest.raises(SpecError, match="concurrency"):
        LoadPlan(concurrency=(0,))
    with pytest.raises(SpecError, match="distinct names"):
        run_load([], Workload(("x",), (1,), 8), LoadPlan())


def test_local_reference_profile(tiny_prepared, tiny_model_dir):
    from transformers import AutoTokenizer

    w = dataset_workload(tiny_prepared)
    ds = tiny_prepared.dataset
    assert len(w.texts) == len(ds.queries) + len(ds.corpus)
    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    assert list(w.tokens) == [len(tok(t)["input_ids"]) for t in w.texts]  # counted as the model reads them
    assert max(w.tokens) > 64  # the long document: more tokens than the tiny model's max length
    t = local_target(tiny_prepared)
    profile = run_load([t], w, LoadPlan(concurrency=(1, 2), batch_sizes=(4,), requests=4, warmup=1))
    assert all(lv.figures.ok == 4 and lv.figures.errors == 0 for lv in profile.levels)
    assert t.encoder.stats_by_role["document"].texts == 4 + 2 * 4 * 4
    # short texts, one document of 33 tokens, and the long document
    assert {k: v["texts"] for k, v in profile.workload["buckets"].items()} == {"<=32": 13, "<=128": 1, "<=256": 1}
    assert profile.workload["buckets"]["<=256"]["truncated"] == 1


def test_progress_bar_and_reports_when_nothing_succeeds(fake_server, workload, tmp_path, capsys):
    import json

    from evalsuite.load.report import write_load_reports

    server = fake_server()
    server.statuses = [503]
    t = target("down", server)
    profile = run_load(
        [t], workload, LoadPlan(concurrency=(1, 2), batch_sizes=(2,), requests=3, warmup=0), progress=True
    )
    t.close()
    err = capsys.readouterr().err
    assert "load:" in err and "/6 [" in err and "batch 2 x 2 in flight" in err  # total known, level shown
    f = profile.levels[0].figures
    assert (f.ok, f.errors) == (0, 3) and "HTTP 503" in profile.levels[0].first_errors[0]
    paths = write_load_reports(profile, tmp_path)

    def strict(const):
        raise AssertionError(f"non-JSON constant {const} in load.json")

    report = json.loads(paths["json"].read_text(), parse_constant=strict)
    assert report["profile"]["levels"][0]["p95_ms"] is None and report["profile"]["levels"][0]["errors"] == 3
    assert "| down | 2 | 1 | 0.0 | 0.0 | 0.0 | - | - | - | 3 | 0 |" in paths["markdown"].read_text()


def test_a_crashing_target_stops_the_run_instead_of_losing_requests(workload):
    class Broken:
        name = "broken"

        def __init__(self):
            self.calls = 0

        def send(self, texts):
            self.calls += 1
            if self.calls > 3:
                raise RuntimeError("bug in the target")
            return "ok", ""

        def close(self):
            pass

    with pytest.raises(RuntimeError, match="bug in the target"):
        run_load([Broken()], workload, LoadPlan(concurrency=(2,), batch_sizes=(1,), requests=20, warmup=0))
