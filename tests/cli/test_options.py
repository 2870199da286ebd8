"""Options are declared once: help texts show the defaults of the dataclasses that own them."""

import argparse
import dataclasses

import pytest

from evalsuite.canary.embedding.options import CANARY_OPTIONS
from evalsuite.canary.embedding.settings import CanarySettings
from evalsuite.cli import build_parser
from evalsuite.run.options import RUN_OPTIONS, add_options, collect, render_default
from evalsuite.run.spec import RunSpec
from evalsuite.sweep.options import SWEEP_OPTIONS

SPEC_DEFAULTS = {f.name: f.default for f in dataclasses.fields(RunSpec)}


def _help(options, flag):
    parser = argparse.ArgumentParser()
    add_options(parser.add_argument, options)
    action = next(a for a in parser._actions if flag in a.option_strings)
    return action.help.replace("%%", "%")


@pytest.mark.parametrize(
    "opt",
    [o for o in RUN_OPTIONS if SPEC_DEFAULTS.get(o.dest) is not None and o.kwargs.get("action") != "store_const"],
    ids=lambda o: o.flag,
)
def test_run_option_help_shows_the_runspec_default(opt):
    assert _help(RUN_OPTIONS, opt.flag).endswith(f"(default: {render_default(SPEC_DEFAULTS[opt.dest])})")


def test_rendered_defaults_are_the_real_ones():
    assert _help(RUN_OPTIONS, "--metrics").endswith("(default: ndcg@10,recall@10,recall@100,mrr@10)")
    assert _help(RUN_OPTIONS, "--batch-size").endswith("(default: 64)")


@pytest.mark.parametrize(
    "flag, name",
    [
        ("--canary-min-cosine", "canary_min_cosine"),
        ("--endpoint-timeout", "endpoint_timeout"),
        ("--endpoint-concurrency", "endpoint_concurrency"),
    ],
)
def test_canary_option_help_shows_the_settings_default(flag, name):
    assert _help(CANARY_OPTIONS, flag).endswith(f"(default: {render_default(CanarySettings.option_default(name))})")


def test_parsed_defaults_stay_none_so_the_spec_file_can_fill_them():
    parser = argparse.ArgumentParser()
    add_options(parser.add_argument, RUN_OPTIONS + SWEEP_OPTIONS)
    assert collect(parser.parse_args([]), RUN_OPTIONS + SWEEP_OPTIONS) == {}


def test_one_out_option_for_run_sweep_and_canary():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    helps = {}
    for command in ("run", "sweep", "canary"):
        action = next(a for a in sub.choices[command]._actions if "--out" in a.option_strings)
        helps[command] = action.help
        assert action.help.startswith("report directory (default: reports/") and action.metavar == "DIR"
    assert len(set(helps.values())) == 3  # one declaration, each command states its own default


def test_a_spec_error_becomes_a_parse_error(capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["run", "--metrics", "bogus@3"])
    assert info.value.code == 2 and "not a ranx metric" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sweep", "--vary", "colour=red"])
    assert "colour" in capsys.readouterr().err


def test_the_endpoint_client_options_say_the_same_under_pytest_and_the_cli():
    """One option, one meaning: the canary's help (pytest, `evalsuite canary`) and `run --endpoint`'s agree."""
    from evalsuite.run.options import RUN_ENDPOINT_OPTIONS

    canary = {o.flag: o.help.removeprefix("canary: ") for o in CANARY_OPTIONS}
    run = {o.flag: o.help.removeprefix("with --endpoint: ") for o in RUN_ENDPOINT_OPTIONS}
    shared = (canary.keys() & run.keys()) - {"--endpoint"}  # the URL: the canary's subject, or run's encoder
    assert "--endpoint-concurrency" in shared and canary["--endpoint-concurrency"].endswith("per URL")
    assert all(canary[f] == run[f] for f in shared), {f: (canary[f], run[f]) for f in shared if canary[f] != run[f]}
