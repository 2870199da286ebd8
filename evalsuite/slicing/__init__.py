"""Slices: per-query metrics grouped by query length, relevant-document length and metadata fields.

``selectors.py`` parses a slice's name (``topic=finance``, ``doclen>256``); ``tokens.py`` counts tokens
with the model's fast tokenizer (no torch); ``index.py`` profiles each query and averages the
per-query metrics of each slice.
"""

from .index import DEFAULT_FIELDS, MIN_INTERVAL, MIN_QUERIES, QueryProfile, SliceIndex, SliceRow, build_slice_index
from .selectors import Selector, length_buckets, parse_selector

__all__ = [
    "DEFAULT_FIELDS",
    "MIN_INTERVAL",
    "MIN_QUERIES",
    "QueryProfile",
    "Selector",
    "SliceIndex",
    "SliceRow",
    "build_slice_index",
    "length_buckets",
    "parse_selector",
]
