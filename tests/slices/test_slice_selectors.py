"""Slice selectors: every form parses to its canonical name, length bounds are what the operator says,
the report's buckets partition the lengths, and a bad selector names the forms."""

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.slicing import length_buckets, parse_selector


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("topic=finance", "topic=finance"),
        (" topic = finance ", "topic=finance"),
        ("doc.domain=legal", "doc.domain=legal"),
        ("qlen<=32", "qlen<=32"),
        ("doclen > 256", "doclen>256"),
        ("qlen=33..128", "qlen=33..128"),
        ("doclen=truncated", "doclen=truncated"),
        ("qlen=7", "qlen=7"),
    ],
)
def test_canonical_names(text, canonical):
    assert parse_selector(text).text == canonical


@pytest.mark.parametrize(
    "text, inside, outside",
    [
        ("qlen<=32", [0, 1, 32], [33]),
        ("qlen<32", [31], [32]),
        ("qlen>=32", [32, 1000], [31]),
        ("doclen>256", [257], [256]),
        ("doclen=33..128", [33, 128], [32, 129]),
        ("qlen=7", [7], [6, 8]),
    ],
)
def test_length_bounds(text, inside, outside):
    s = parse_selector(text)  # bug caught: an off-by-one in < / > (e.g. > read as >=)
    assert all(s.holds(n, 10_000) for n in inside)
    assert not any(s.holds(n, 10_000) for n in outside)


def test_truncated_is_relative_to_the_contract():
    s = parse_selector("doclen=truncated")
    assert s.holds(65, 64) and not s.holds(64, 64)


def test_buckets_partition_every_length():
    buckets = [b for b in length_buckets("doclen") if b.op != "truncated"]
    assert [b.text for b in buckets] == [
        "doclen<=32",
        "doclen=33..128",
        "doclen=129..256",
        "doclen=257..512",
        "doclen>512",
    ]
    for n in range(0, 1100):
        assert sum(b.holds(n, 10_000) for b in buckets) == 1, n
    assert length_buckets("qlen")[-1].text == "qlen=truncated"


@pytest.mark.parametrize(
    "text, says",
    [
        ("topic", "is not a slice; use one of FIELD=VALUE"),
        ("qlen<=many", "'many' is not a token count"),
        ("qlen=9..3", "the range 9..3 is empty"),
        ("doc.=x", "name the document field"),
        ("qlen<0", "no text has fewer than 0 tokens"),
    ],
)
def test_bad_selectors_say_what_to_write(text, says):
    with pytest.raises(SpecError, match=None) as exc:
        parse_selector(text)
    assert says in str(exc.value)
