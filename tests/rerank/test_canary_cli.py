"""`evalsuite canary --reranker-endpoint URL`: the reranker canary from the canary command, alone or beside the
embedding canary (the worse exit status of the two); the checks themselves are tested in test_canary_faults.py."""

from __future__ import annotations

import argparse
import json

import pytest

from evalsuite.cli import build_parser, main


@pytest.fixture
def canary(canary_argv, tmp_path):
    """``evalsuite canary [--reranker-endpoint URL] [--reranker DIR] ... --out tmp_path``: its exit status."""

    def run(*extra, endpoint=None, reranker=True, command="canary"):
        return main(canary_argv(command, endpoint, tmp_path, *extra, reranker=reranker))

    return run


def test_canary_with_a_reranker_endpoint_runs_the_reranker_canary(server, canary, tmp_path, capsys):
    assert canary(endpoint=server.url) == 0
    out = capsys.readouterr().out
    assert "rerank canary  " + server.url in out and "all checks passed" in out
    assert json.loads((tmp_path / "canary.json").read_text())["passed"] is True
    assert (tmp_path / "report.md").read_text().startswith("# Reranker canary: PASS")
    assert json.loads((tmp_path / "canary.json").read_text())["family"] == "reranker"  # no embedding canary

    server.fault = "no_activation"
    assert canary(endpoint=server.url) == 1
    out = capsys.readouterr().out
    assert "FAIL  score agreement" in out and "FAILED: score_agreement" in out
    assert json.loads((tmp_path / "canary.json").read_text())["passed"] is False


@pytest.mark.parametrize(("embedding", "fault", "expected"), [(1, "none", 1), (0, "shuffled", 1), (0, "none", 0)])
def test_with_both_endpoints_both_canaries_run_and_the_worse_status_wins(
    server, canary, tmp_path, monkeypatch, embedding, fault, expected
):
    from evalsuite.canary import cli as canary_cli

    ran = []

    def embedding_canary(args):
        ran.append((args.endpoint, args.out))
        return embedding

    monkeypatch.setattr(canary_cli, "embedding_canary", embedding_canary)
    server.fault = fault
    assert canary("--endpoint", "http://127.0.0.1:9/v1", endpoint=server.url) == expected
    assert ran == [(["http://127.0.0.1:9/v1"], str(tmp_path))]  # --endpoint repeats (a fleet)
    report = json.loads((tmp_path / "reranker" / "canary.json").read_text())  # beside the embedding canary's
    assert report["passed"] is (fault == "none")


def test_usage_errors_come_before_either_canary_runs(canary, monkeypatch, capsys):
    from evalsuite.canary import cli as canary_cli

    monkeypatch.setattr(canary_cli, "embedding_canary", lambda args: pytest.fail("the embedding canary ran"))
    assert canary("--endpoint", "http://127.0.0.1:9/v1", endpoint="http://127.0.0.1:9/v1", reranker=False) == 2
    assert "the reranker canary needs --reranker DIR" in capsys.readouterr().err
    monkeypatch.delenv("EVALSUITE_NO_SUCH_KEY", raising=False)
    assert canary("--api-key-env", "EVALSUITE_NO_SUCH_KEY", endpoint="http://127.0.0.1:9/v1") == 2
    assert "$EVALSUITE_NO_SUCH_KEY, but that environment variable is not set" in capsys.readouterr().err
    monkeypatch.undo()
    assert canary() == 2  # neither endpoint: the canary's usage error
    assert "the canary needs --endpoint URL" in capsys.readouterr().err


def test_rerank_canary_stays_an_alias(server, canary, tmp_path):
    assert canary(endpoint=server.url, command="rerank-canary") == 0
    assert json.loads((tmp_path / "canary.json").read_text())["passed"] is True
    assert canary(command="rerank-canary") == 2  # without --reranker-endpoint


def test_no_two_options_of_a_command_share_a_parsed_name():
    """A reranker option parsed into a first-stage setting (``--reranker-max-length`` into ``max_length``) changes
    the first stage; the reranker canary's ``--reranker-endpoint`` into the embedding canary's ``endpoint`` would
    run the wrong canary. ``--api-key-env`` is one option, shared."""
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    for name, parser in commands.choices.items():
        flags: dict[str, list[str]] = {}
        for action in parser._actions:
            if action.option_strings:
                flags.setdefault(action.dest, []).append(action.option_strings[0])
        assert not {d: f for d, f in flags.items() if len(f) > 1}, name
    args = build_parser().parse_args(
        ["canary", "--max-length", "32", "--reranker-max-length", "16", "--dtype", "float16", "--reranker-dtype",
         "bfloat16", "--endpoint", "http://a:1/v1", "--reranker-endpoint", "http://b:2/v1", "--api-key-env", "K"]
    )  # fmt: skip
    from evalsuite.rerank.options import rerank_settings
    from evalsuite.run.options import collect

    assert collect(args)["max_length"] == 32 and collect(args)["dtype"] == "float16"
    assert rerank_settings(args) == {"max_length": 16, "dtype": "bfloat16"}
    assert args.endpoint == ["http://a:1/v1"] and args.reranker_endpoint == "http://b:2/v1"
    assert args.api_key_env == "K"
