"""Markdown cells a person reads: texts quoted so an empty or space-ended prefix shows; a warm run's device."""

from evalsuite.reports.markdown import contract_rows
from evalsuite.reports.run_reports import device_text


def test_contract_texts_are_quoted_in_code_spans_and_unset_fields_left_out():
    rows = dict(contract_rows({"query_prefix": "query: ", "doc_prefix": "", "dim": 384, "normalize": True, "x": None}))
    assert rows == {"query_prefix": '`"query: "`', "doc_prefix": '`""`', "dim": "384", "normalize": "True"}


def test_a_warm_run_says_no_model_was_loaded_instead_of_a_device():
    assert device_text("cache") == "none: every vector came from the embedding cache (no model loaded)"
    assert device_text("cuda:0") == "cuda:0" and device_text(None) == "None"
