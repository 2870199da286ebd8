"""Plug-ins for real: the demo plug-in of docs/ARCHITECTURE.md (its whole source, read from the page) installed as a
distribution (a package and its ``.dist-info`` with entry points, on ``sys.path``): its store in `evalsuite audit
--help` and in an audit, its audit check among the audit's verdicts, its gate kind in a gated pytest session, its job
in `evalsuite --help` and run through `evalsuite.cli.main`; a check joining the embedding canary; a job's pytest part
and its exit statuses; a broken plug-in named by its entry point."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import evalsuite
from evalsuite.base import plugins
from evalsuite.base.errors import PluginError, SpecError
from evalsuite.cli import main
from evalsuite.jobs import JOBS, all_jobs, pytest_parts
from evalsuite.model import directory_digest

from .conftest import demo_plugin, install

SOURCE, PYPROJECT = demo_plugin()


def entry_points_txt(pyproject: str) -> str:
    """pyproject.toml's ``[project.entry-points."G"]`` tables as entry_points.txt's ``[G]`` sections (values
    unquoted)."""
    sections = re.sub(r'^\[project\.entry-points\."([^"]+)"\]', r"[\1]", pyproject, flags=re.M)
    return re.sub(r'^(\S+) = "([^"]*)"$', r"\1 = \2", sections, flags=re.M)


@pytest.fixture
def demo(tmp_path: Path, on_path) -> Path:  # type: ignore[no-untyped-def]
    site = install(
        tmp_path / "site",
        "evalsuite-demo-plugin",
        entry_points_txt(PYPROJECT),
        {"evalsuite_demo_plugin/__init__.py": SOURCE},
    )
    on_path(site)
    return site


def _npy_index(root: Path, vectors: np.ndarray, ids: list[str]) -> Path:
    root.mkdir(parents=True)
    np.save(root / "vectors.npy", np.ascontiguousarray(vectors, dtype=np.float32))
    (root / "ids.txt").write_text("\n".join(ids) + "\n", encoding="utf-8")
    return root


def test_the_plugin_store_is_in_the_help_and_audits_an_index(demo, tiny_model_dir, small_beir, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["audit", "--help"])
    assert exit_.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "npy:... (npy, a plug-in: DIR/vectors.npy and DIR/ids.txt)" in help_text
    run = evalsuite.evaluate(tiny_model_dir, small_beir, device="cpu", use_cache=False)
    vectors, ids = run.result.doc_vectors, list(run.result.dataset.doc_ids)
    assert vectors is not None
    good = _npy_index(tmp_path / "good", vectors, ids)
    argv = ["audit", "--model", str(tiny_model_dir), "--dataset", str(small_beir), "--device", "cpu", "--no-cache"]
    assert main([*argv, "--index", f"npy:{good}", "--out", str(tmp_path / "out")]) == 0, capsys.readouterr().out
    report = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert report["index"]["index"]["store"] == "npy" and report["passed"] is True
    assert {v["check"]: v["status"] for v in report["index"]["verdicts"]}["fidelity"] == "PASS"
    # the plug-in's audit check runs after the built-in ones, in audit.json and report.md
    last = report["index"]["verdicts"][-1]
    assert (last["check"], last["status"]) == ("rows", "PASS")
    assert last["message"] == f"rows: {len(ids)} stored rows for {len(ids)} chunks"
    assert f"| rows | PASS | rows: {len(ids)} stored rows" in (tmp_path / "out" / "report.md").read_text()
    swapped = _npy_index(tmp_path / "swapped", vectors, [ids[1], ids[0], *ids[2:]])  # two ids zipped wrongly
    bad = evalsuite.audit(f"npy:{swapped}", tiny_model_dir, small_beir, device="cpu", use_cache=False)
    assert not bad.passed and next(v for v in bad.verdicts if v.check == "fidelity").status == "FAIL"
    assert next(v for v in bad.verdicts if v.check == "rows").status == "PASS"
    short = _npy_index(tmp_path / "short", vectors[:-1], ids[:-1])  # the last chunk never stored
    cut = evalsuite.audit(f"npy:{short}", tiny_model_dir, small_beir, device="cpu", use_cache=False)
    rows = next(v for v in cut.verdicts if v.check == "rows")
    assert rows.status == "FAIL" and rows.message == f"rows: {len(ids) - 1} stored rows for {len(ids)} chunks"


def test_a_gated_pytest_session_judges_the_plugin_gate_kind(
    demo, pytester, tiny_model_dir, small_beir, model_stack_loaded
):
    model = str(tiny_model_dir)
    result = pytester.runpytest(
        *("-p", "no:randomly", "-p", "no:cacheprovider", "--model", model, "--model-rev", directory_digest(model)),
        *("--dataset", str(small_beir), "--no-cache", "--device", "cpu"),
        *("--gate", "ndcg@10:at_least=0.0", "--gate", "ndcg@10:at_least=1.5"),
    )
    result.assert_outcomes(passed=3, failed=1)  # contract, integrity, at_least 0.0 / at_least 1.5
    out = result.stdout.str()
    assert "is below 1.5 (at_least)" in out and "gate[ndcg@10:at_least=1.5]" in out


def test_the_plugin_job_is_a_subcommand_with_its_options_and_statuses(demo, capsys) -> None:
    """`evalsuite demo-hello` is in `evalsuite --help` after the built-in jobs, parsed with its declared option,
    dispatched, and exits with its declared statuses (bugs caught: the plug-in jobs left out of the parser or the
    help, or listed before the built-in ones)."""
    assert [job.name for job in all_jobs()] == [*(job.name for job in JOBS), "demo-hello"]
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "demo-hello say hello (the demo plug-in's job)" in help_text
    assert help_text.index("budget") < help_text.index("demo-hello")
    with pytest.raises(SystemExit):
        main(["demo-hello", "--help"])
    assert "--name NAME whom to greet (default: world)" in " ".join(capsys.readouterr().out.split())
    assert main(["demo-hello", "--name", "Ada"]) == 0
    assert capsys.readouterr().out == "hello, Ada, from the demo plug-in\n"
    assert main(["demo-hello"]) == 0 and capsys.readouterr().out == "hello, world, from the demo plug-in\n"
    assert main(["demo-hello", "--name", " "]) == 1 and capsys.readouterr().out == ""


STATUS_JOB = """
import argparse

from evalsuite.base.jobs import Job
from evalsuite.base.options import Option
from evalsuite.gating.parts import PytestPart


def _run(args: argparse.Namespace) -> int:
    return int(args.status)


STATUS = Job(
    "exit-with",
    help="return --status",
    options=lambda: (Option("--status", "the status to return", {"type": int}),),
    run=_run,
    exit_codes={0: "asked for 0", 1: "asked for 1"},
    pytest=lambda: PytestPart((Option("--exit-with-note", "a note for the session"),)),
)"""

NO_ZERO = """
from evalsuite.base.jobs import Job

NO_ZERO = Job("no-zero", help="", options=tuple, run=lambda args: 1, exit_codes={1: "failed"})
"""


def test_a_plugin_job_is_held_to_its_statuses_and_adds_its_pytest_part(tmp_path, on_path, pytester) -> None:
    """Its statuses go through ``Job.status`` (bug caught: main returning whatever a plug-in job returns); its
    pytest part is among the plugin's (bug caught: ``pytest_parts`` looping over the built-in jobs only)."""
    on_path(install(tmp_path, "evalsuite-exit-with", "[evalsuite.jobs]\nexit-with = exit_with_plugin:STATUS\n",
                    {"exit_with_plugin.py": STATUS_JOB}))  # fmt: skip
    assert main(["exit-with", "--status", "0"]) == 0 and main(["exit-with", "--status", "1"]) == 1
    with pytest.raises(RuntimeError, match=r"evalsuite exit-with returned exit status 3, which its Job does not"):
        main(["exit-with", "--status", "3"])
    assert [job.name for job, _ in pytest_parts()] == ["run", "audit", "budget", "exit-with"]
    config = pytester.parseconfig("--exit-with-note", "from the plug-in")
    assert config.getoption("evalsuite_exit_with_note") == "from the plug-in"
    sys.modules.pop("exit_with_plugin", None)


def test_without_the_plugin_its_names_are_unknown() -> None:
    """The demo's names come from the installed distribution, nowhere else (the tests above could not pass)."""
    plugins.forget()
    from evalsuite.audit.stores import store_for
    from evalsuite.gating.kinds import parse_gate

    with pytest.raises(SpecError, match="unknown kind 'at_least'"):
        parse_gate("ndcg@10:at_least=0.3")

    with pytest.raises(SpecError, match="no store answers this URI"):
        store_for("npy:/x")

    from evalsuite.audit.checks import AUDIT_CHECKS, audit_checks

    assert audit_checks() == AUDIT_CHECKS
    assert all_jobs() == JOBS
    with pytest.raises(SystemExit):
        main(["demo-hello"])


EMBEDDING_CHECK = """
from evalsuite.checks import Check, CheckOutcome
from evalsuite.checks.plugins import PluginCheck


def _served(ctx):
    return CheckOutcome("served_name", ctx.settings.served_model is not None, "served name: -")


SERVED = PluginCheck(
    family="embedding",
    check=Check(
        name="served_name", label="served name", run=_served, explanation="asks for a served model name",
        example="served name: none given", stage="identity",
    ),
)
"""


def test_a_plugin_check_joins_the_embedding_canary(tmp_path, on_path) -> None:
    """Its family's readers (the checks a session runs, the report's table, the triage chain) take it after the
    built-in ones; the audit's do not (it named the embedding family)."""
    on_path(install(tmp_path, "evalsuite-served-name", "[evalsuite.checks]\nserved = served_name_plugin:SERVED\n",
                    {"served_name_plugin.py": EMBEDDING_CHECK}))  # fmt: skip
    from evalsuite.audit.checks import AUDIT_CHECKS, audit_checks
    from evalsuite.canary import triage
    from evalsuite.canary.embedding.registry import CANARY_CHECKS, canary_checks, check_names, get_check
    from evalsuite.canary.embedding.settings import CanarySettings
    from evalsuite.canary.report import checks_table
    from evalsuite.checks import CheckOutcome

    assert [c.name for c in canary_checks()] == [*(c.name for c in CANARY_CHECKS), "served_name"]
    assert check_names(CanarySettings(endpoint="http://127.0.0.1:1/v1"))[-1] == "served_name"
    assert get_check("served_name").label == "served name" and audit_checks() == AUDIT_CHECKS
    assert "| served_name | served name | - | once | asks for a served model name |" in checks_table()
    links = {link.stage: link for link in triage.checklist([CheckOutcome("served_name", False, "served name: -")], [])}
    assert links["identity"].status == "FAIL"
    sys.modules.pop("served_name_plugin", None)


@pytest.mark.parametrize(
    ("group", "target", "says"),
    [
        ("evalsuite.stores", "evalsuite_no_such_module:STORE", r"cannot be loaded \(ModuleNotFoundError"),
        ("evalsuite.stores", "evalsuite.gating.kinds:DEFAULT_MAX_DROP", "names a float, not a StoreKind"),
        ("evalsuite.gate_kinds", "evalsuite.gating.kinds:Floor", "declares 'floor', a name a built-in already has"),
        ("evalsuite.checks", "evalsuite.audit.checks:SHAPE", "names a Check, not a PluginCheck"),
        ("evalsuite.checks", "evalsuite_no_such_module:ROWS", r"cannot be loaded \(ModuleNotFoundError"),
        ("evalsuite.jobs", "evalsuite.gating.kinds:DEFAULT_MAX_DROP", "names a float, not a Job"),
        ("evalsuite.jobs", "evalsuite.audit.cli:JOB", "declares 'audit', a name a built-in already has"),
        ("evalsuite.jobs", "no_zero_plugin:NO_ZERO", r"cannot be loaded \(ValueError: job no-zero: exit_codes must"),
    ],
)
def test_a_broken_plugin_is_named_by_its_entry_point(tmp_path, on_path, capsys, group, target, says) -> None:
    on_path(install(tmp_path, "evalsuite-broken-plugin", f"[{group}]\nbroken = {target}\n",
                    {"no_zero_plugin.py": NO_ZERO}))  # fmt: skip
    named = rf"entry point broken = {re.escape(target)} \(group {group}, from evalsuite-broken-plugin 0.1\)"
    from evalsuite.audit.checks import audit_checks
    from evalsuite.audit.stores import store_kinds
    from evalsuite.gating.kinds import gate_kinds

    family = {
        "evalsuite.stores": store_kinds,
        "evalsuite.gate_kinds": gate_kinds,
        "evalsuite.checks": audit_checks,
        "evalsuite.jobs": all_jobs,
    }
    with pytest.raises(PluginError, match=f"{named}.*{says}"):
        family[group]()
    if group == "evalsuite.stores":  # the help still prints, and says so
        with pytest.raises(SystemExit):
            main(["audit", "--help"])
        assert "a plug-in store failed to load: entry point broken" in " ".join(capsys.readouterr().out.split())
    if group == "evalsuite.jobs":  # refused, never shadowing: the help prints and says so, every job exits 2
        with pytest.raises(SystemExit):
            main(["--help"])
        assert "a plug-in job failed to load: entry point broken" in " ".join(capsys.readouterr().out.split())
        for argv in (["history", str(tmp_path / "empty")], ["broken"]):
            assert main(argv) == 2
            assert re.search(f"^evalsuite: error: {named}.*{says}", " ".join(capsys.readouterr().err.split()))
        sys.modules.pop("no_zero_plugin", None)


TAKEN = """
from evalsuite.audit.checks import SHAPE
from evalsuite.checks.plugins import PluginCheck

{target} = PluginCheck(family="{family}", check=SHAPE)
"""


def test_two_plugin_jobs_of_one_name_are_refused(tmp_path, on_path) -> None:
    """Bug caught: the second distribution's job silently shadowing the first's."""
    site = install(tmp_path, "evalsuite-first", "[evalsuite.jobs]\nfirst = exit_with_plugin:STATUS\n",
                   {"exit_with_plugin.py": STATUS_JOB})  # fmt: skip
    on_path(install(site, "evalsuite-second", "[evalsuite.jobs]\nsecond = exit_with_plugin:STATUS\n"))
    taken = r"entry point first = exit_with_plugin:STATUS \(group evalsuite.jobs, from evalsuite-first 0.1\)"
    with pytest.raises(PluginError, match=rf"entry point second .*from evalsuite-second 0.1\) declares 'exit-with', "
                       rf"a name {taken} already has"):  # fmt: skip
        all_jobs()
    sys.modules.pop("exit_with_plugin", None)


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("AUDIT", "declares 'shape', a name a built-in audit check already has"),
        (
            "ELSEWHERE",
            r"cannot be loaded \(SpecError: plug-in check 'shape': family 'reranker' is not one of embedding",
        ),
    ],
)
def test_a_plugin_check_takes_no_name_of_its_family_and_names_a_family(tmp_path, on_path, target, says) -> None:
    module = TAKEN.format(target=target, family="audit" if target == "AUDIT" else "reranker")
    on_path(
        install(
            tmp_path,
            "evalsuite-taken",
            f"[evalsuite.checks]\ntaken = taken_plugin:{target}\n",
            {"taken_plugin.py": module},
        )
    )
    from evalsuite.audit.checks import audit_checks
    from evalsuite.canary.embedding.registry import canary_checks

    with pytest.raises(PluginError, match=f"entry point taken = taken_plugin:{target} .*{says}"):
        audit_checks()
    if target == "AUDIT":  # another family's built-in names are not taken: the embedding canary is unaffected
        assert canary_checks()[-1].name == "auth"
    sys.modules.pop("taken_plugin", None)
