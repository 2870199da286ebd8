"""Every spec key is checked by the type it is declared with: a value of the wrong type in evalsuite.toml or
[tool.evalsuite] is a usage error naming the file, the key, the type it wants and what it got (never a
traceback from deep inside the run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.base.settings import describe, fits
from evalsuite.base.specfile import load_spec_file
from evalsuite.gating.plan import DATASET_KEYS, SESSION_KEYS, build_plan
from evalsuite.rerank.run import RerankSpec
from evalsuite.run.spec import RunSpec


def plan_of(settings: dict[str, object], tmp_path: Path):
    return build_plan(
        file_settings=settings,
        file_path=tmp_path / "evalsuite.toml",
        run_flags={},
        session_flags={},
        cwd=tmp_path,
    )


@pytest.mark.parametrize(
    ("settings", "key", "wants"),
    [
        ({"model": 3}, "model", "a string"),
        ({"pooling": {"mode": "cls"}}, "pooling", "a string"),
        ({"metrics": 10}, "metrics", "a list of strings"),
        ({"max_length": "256"}, "max_length", "an integer"),
        ({"max_length": True}, "max_length", "an integer"),
        ({"normalize": "yes"}, "normalize", "true or false"),
        ({"endpoint_timeout": "slow"}, "endpoint_timeout", "a number"),
        ({"slice_by": 7}, "slice_by", "a list of strings"),
        ({"gates": 0.01}, "gates", "a list of strings"),
        ({"gates": ["ndcg@10>=0.1", 3]}, "gates", "a list of strings"),
        ({"baseline": ["a.json"]}, "baseline", "a string"),
        ({"grid": "true"}, "grid", "true or false"),
        ({"sweep": 5}, "sweep", "a list of strings or a table"),
        ({"inconclusive": 1}, "inconclusive", "a string"),
        ({"datasets": [{"path": "bundled", "name": 5}]}, "name", "a string"),
        ({"datasets": [{"path": 1}]}, "path", "a string"),
        ({"datasets": [{"path": "bundled", "metrics": {"a": 1}}]}, "metrics", "a list of strings"),
        ({"rerank": {"reranker": "x", "depth": "100"}}, "depth", "an integer"),
    ],
)
def test_a_value_of_the_wrong_type_names_key_type_and_file(tmp_path, settings, key, wants):
    with pytest.raises(SpecError) as info:
        plan_of(settings, tmp_path)
    message = str(info.value)
    assert str(tmp_path / "evalsuite.toml") in message, message
    assert f"{key} must be {wants}, got" in message, message


def test_values_of_the_declared_types_pass(tmp_path):
    plan = plan_of(
        {
            "metrics": "ndcg@10",  # one string is a one-item list
            "max_length": 128,
            "endpoint_timeout": 30,  # an integer is a number
            "normalize": False,
            "gates": "ndcg@10>=0.1",
            "grid": False,
            "sweep": {"pooling": ["cls", "mean"]},
            "datasets": [{"path": "bundled", "name": "m", "metrics": ["ndcg@10"], "slice_by": ["topic"]}],
        },
        tmp_path,
    )
    (dp,) = plan.datasets
    assert dp.spec.max_length == 128 and dp.spec.endpoint_timeout == 30 and dp.spec.normalize is False


def test_the_type_words():
    assert describe(int | None) == "an integer"
    assert describe(tuple[str, ...]) == "a list of strings"
    assert describe(list[str] | dict) == "a list of strings or a table"
    assert fits(None, str | None) and not fits(None, str)
    assert fits(3, float) and not fits(True, float) and not fits(True, int) and fits(True, bool)
    assert fits(["a"], tuple[str, ...]) and not fits(["a", 1], tuple[str, ...])


def test_every_declared_key_has_a_type_the_checker_reads():
    """A key declared with a type the checker does not understand would pass anything unchecked."""
    for table in (SESSION_KEYS, DATASET_KEYS):
        for key, hint in table.items():
            assert describe(hint) != str(hint), key
    from evalsuite.base.settings import field_types

    for cls in (RunSpec, RerankSpec):
        for name, hint in field_types(cls).items():
            words = describe(hint)
            assert words.startswith(("a ", "an ", "true or false")), (cls.__name__, name, hint)


def test_tool_evalsuite_that_is_not_a_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool]\nevalsuite = "fast"\n')
    with pytest.raises(SpecError, match=r"\[tool.evalsuite\] must be a table"):
        load_spec_file(tmp_path / "pyproject.toml")
