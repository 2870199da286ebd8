"""The gate-kind registry is what the --gate help, parse errors and the README's table read."""

from pathlib import Path

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.gating.kinds import GATE_KINDS, forms, gate_help, kinds_markdown, parse_gate

README = Path(__file__).resolve().parents[2] / "docs" / "gates.md"  # the gate kinds table lives in the gates page


@pytest.mark.parametrize("kind", GATE_KINDS, ids=lambda k: k.name)
def test_every_kind_declares_a_parsable_example(kind):
    gate = parse_gate(kind.example)
    assert (gate.kind, gate.expr, gate.needs_reference) == (kind.name, kind.example, kind.needs_reference)
    assert kind.fails_when and kind.form
    assert f"'{kind.example}'" in gate_help() and kind.form in forms()


def test_kind_names_are_unique():
    assert len({k.name for k in GATE_KINDS}) == len(GATE_KINDS)


def test_unknown_kind_lists_every_form():
    with pytest.raises(SpecError) as info:
        parse_gate("ndcg@10:max_dorp=0.1")
    assert all(k.form in str(info.value) for k in GATE_KINDS)


def test_readme_gate_table_is_the_registry():
    assert kinds_markdown() in README.read_text(encoding="utf-8")
