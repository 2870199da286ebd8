"""One counter shape for the reference encoder and the reranker (`base/counters.py`): the report keys and their
order as timing and results.json hold them, seconds rounded, add / minus / copy field by field."""

from __future__ import annotations

from evalsuite.encode.base import EncodeStats
from evalsuite.rerank.local import RerankStats


def test_the_report_is_every_field_in_order_seconds_rounded() -> None:
    e = EncodeStats(texts=3, tokens=40, padded_tokens=48, truncated=1, batches=2, seconds=0.123456)
    assert list(e.to_dict().items()) == [
        ("texts", 3),
        ("tokens", 40),
        ("padded_tokens", 48),
        ("truncated", 1),
        ("batches", 2),
        ("seconds", 0.1235),
    ]
    r = RerankStats(pairs=5, seconds=1.0)
    assert list(r.to_dict()) == ["pairs", "tokens", "padded_tokens", "truncated", "batches", "seconds"]
    assert r.to_dict()["pairs"] == 5 and isinstance(r.to_dict()["tokens"], int)


def test_add_minus_and_copy_work_field_by_field() -> None:
    a = EncodeStats(texts=3, tokens=40, padded_tokens=48, truncated=1, batches=2, seconds=0.5)
    before = a.copy()
    a.add(EncodeStats(texts=2, tokens=10, padded_tokens=12, truncated=0, batches=1, seconds=0.25))
    assert a == EncodeStats(texts=5, tokens=50, padded_tokens=60, truncated=1, batches=3, seconds=0.75)
    assert before == EncodeStats(texts=3, tokens=40, padded_tokens=48, truncated=1, batches=2, seconds=0.5)
    assert a.minus(before) == EncodeStats(texts=2, tokens=10, padded_tokens=12, truncated=0, batches=1, seconds=0.25)
    assert type(RerankStats(pairs=2).minus(RerankStats(pairs=1))) is RerankStats
