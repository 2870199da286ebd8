"""The audit's background start (``AuditContext.prefetch``): the sample's reference vectors are encoded in another
thread while the vectors stream, and the fidelity check finds exactly what it computes in order."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from evalsuite.audit.context import AuditContext
from evalsuite.audit.runner import AuditTarget, open_context, reference_encoder
from evalsuite.audit.settings import AuditSettings
from evalsuite.audit.source import SourceOptions
from evalsuite.run.pipeline import prepare
from evalsuite.run.spec import RunSpec

from .conftest import DOC_PREFIX


def test_the_sample_is_encoded_in_the_background_with_the_same_result(ingest, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    vectors = ingest.vectors.copy()
    vectors[[5, 77]] = vectors[[77, 5]]  # two rows swapped: a fidelity failure, so the values matter
    index, ids = ingest.write("prefetch", vectors)
    prepared = prepare(RunSpec.from_mapping({"dataset": str(ingest.dataset), "doc_prefix": DOC_PREFIX}, source="test"))
    encoded_in: list[str] = []
    original = AuditContext.reference_vectors

    def recorded(self: AuditContext, chunk_ids: list[str]) -> np.ndarray:
        encoded_in.append(threading.current_thread().name)
        return original(self, chunk_ids)

    monkeypatch.setattr(AuditContext, "reference_vectors", recorded)

    def fidelity(prefetch: bool):  # type: ignore[no-untyped-def]
        target = AuditTarget(f"faiss:{index}", SourceOptions(ids_path=ids))
        ctx = open_context(target, AuditSettings(), prepared, reference_encoder(prepared))
        try:
            if prefetch:
                ctx.prefetch()
            return ctx.fidelity()
        finally:
            ctx.close()

    ahead = fidelity(True)
    assert len(encoded_in) == 1 and encoded_in[0].startswith("evalsuite-audit")  # encoded once, in the background
    in_order = fidelity(False)
    assert encoded_in[1] == threading.main_thread().name
    assert ahead.ids == in_order.ids and np.array_equal(ahead.rows, in_order.rows)
    for field in ("cosine", "stored", "reference"):
        assert np.array_equal(getattr(ahead, field), getattr(in_order, field)), field
    assert (ahead.cosine < 0.99).sum() == 2  # the swapped rows


def test_the_reference_encoder_is_made_once_whichever_threads_ask(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Eight threads asking at once get one encoder, made once; a failed make is not kept (the next ask makes it
    again), as the one compute-once memo (``base/memo.py``) promises."""
    made: list[object] = []
    failures = ["the model did not load"]  # the first make fails

    def make_encoder(prepared: object) -> object:
        if failures:
            raise RuntimeError(failures.pop())
        made.append(prepared)
        time.sleep(0.05)  # the others arrive while it is being made
        return object()

    monkeypatch.setattr("evalsuite.run.pipeline.make_encoder", make_encoder)
    encoder = reference_encoder("prepared")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="did not load"):
        encoder()
    barrier = threading.Barrier(8)
    got: list[object] = []

    def ask() -> None:
        barrier.wait()
        got.append(encoder())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert made == ["prepared"] and len(got) == 8 and all(g is got[0] for g in got)
