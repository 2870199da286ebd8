"""A cold sweep loads the scoring's kernels in the background while the document pass runs, after the model has
loaded (so the two threads do not import at once) and before anything is scored; a warm sweep never starts it."""

from __future__ import annotations

import threading
import time

from evalsuite.encode.cached import CachedEncoder
from evalsuite.run.pipeline import prepare
from evalsuite.scoring import metrics as metrics_module
from evalsuite.sweep import execute, parse_vary, plan_cells, run_sweep


def test_the_kernels_load_beside_the_document_pass_and_before_scoring(tiny_spec, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    events: list[tuple[str, str]] = []
    real_warm, real_encode, real_score = metrics_module.warm, CachedEncoder.encode, execute.score

    def warm(metrics):  # type: ignore[no-untyped-def]
        events.append(("warm-start", threading.current_thread().name))
        real_warm(metrics)
        time.sleep(0.3)  # a slow warm-up: scoring must still wait for it
        events.append(("warm-end", ""))

    def encode(self, texts, *args, role, **kwargs):  # type: ignore[no-untyped-def]
        events.append(("encode-start", role))
        try:
            return real_encode(self, texts, *args, role=role, **kwargs)
        finally:
            events.append(("encode-end", role))

    def score(*args, **kwargs):  # type: ignore[no-untyped-def]
        events.append(("score", ""))
        return real_score(*args, **kwargs)

    monkeypatch.setattr(metrics_module, "warm", warm)
    monkeypatch.setattr(CachedEncoder, "encode", encode)
    monkeypatch.setattr(execute, "score", score)
    prepared = prepare(tiny_spec())
    axes = parse_vary(["pooling=cls,mean", "dim=32,16"])
    cells = plan_cells(prepared.contract, axes, grid=True, info=prepared.model)
    cold = run_sweep(prepared, cells, axes=axes, grid=True)
    names = [e[0] for e in events]
    assert names.count("warm-start") == 1 and events[names.index("warm-start")][1] == "evalsuite-warm-scoring"
    first_pass_done = names.index("encode-end")
    assert first_pass_done < names.index("warm-start") < names.index("encode-end", first_pass_done + 1)
    assert names.index("warm-end") < names.index("score")  # joined before the first scoring

    events.clear()
    warm_run = run_sweep(prepare(tiny_spec()), cells, axes=axes, grid=True)  # every vector cached: no model
    assert "warm-start" not in [e[0] for e in events]
    assert cold.stats.models_loaded == 1 and warm_run.stats.models_loaded == 0
    assert [c.result.metrics for c in warm_run.cells] == [c.result.metrics for c in cold.cells]
