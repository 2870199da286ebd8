"""The prefixes each prefix mode of the diagnosis sends (hypotheses.prefixes), the model's declared prompts included."""

from __future__ import annotations

import pytest

from evalsuite.diagnose.hypotheses import PREFIX_MODES, prefixes
from evalsuite.testing.builders import make_contract

CONTRACT = make_contract(query_prefix="query: ", doc_prefix="passage: ")


@pytest.mark.parametrize(
    ("mode", "query", "document"),
    [
        ("contract", "query: ", "passage: "),
        ("none", "", ""),
        ("swapped", "passage: ", "query: "),  # bug caught: the swap sending the contract's own pair
        ("query_on_both", "query: ", "query: "),
    ],
)
def test_each_mode_sends_its_prefixes(mode, query, document):
    assert prefixes(mode, CONTRACT, {}) == {"query": query, "document": document}


def test_declared_prompts_follow_the_roles_names_then_the_default_prompt():
    """Bugs caught: the default prompt ignored for a role without its own (a model with default_prompt_name served by
    sentence-transformers' encode), or put before the role's own prompt; 'doc' not read as a document prompt."""
    declared = {"query": "Instruct: find\nQuery: ", "retrieval": "Represent: "}
    assert prefixes("declared", CONTRACT, declared) == {"query": "Instruct: find\nQuery: ", "document": ""}
    assert prefixes("declared", CONTRACT, declared, "retrieval") == {
        "query": "Instruct: find\nQuery: ",
        "document": "Represent: ",
    }
    assert prefixes("declared", CONTRACT, {"retrieval": "R: "}, "retrieval") == {"query": "R: ", "document": "R: "}
    assert prefixes("declared", CONTRACT, {"doc": "D: "}) == {"query": "", "document": "D: "}


def test_declared_cannot_be_formed_without_prompts_and_unknown_modes_are_refused():
    assert prefixes("declared", CONTRACT, {}) is None
    assert prefixes("declared", CONTRACT, {"other": "x"}) is None  # a prompt for neither role, and no default
    with pytest.raises(ValueError, match="unknown prefix mode"):
        prefixes("reversed", CONTRACT, {})
    assert set(PREFIX_MODES) == {"contract", "none", "swapped", "query_on_both", "declared"}
