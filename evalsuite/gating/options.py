"""The pytest plugin's gating options (beside the run, sweep and canary options it shares with the CLI)."""

from __future__ import annotations

from ..history.options import HISTORY_ANCHOR_OPTION, HISTORY_OPTION, SUMMARY_MD_OPTION
from ..run.options import Option, spec_type
from .kinds import gate_help, parse_gate
from .plan import DEFAULT_REPORTS_DIR
from .verdicts import MULTIPLICITY, ON_INCONCLUSIVE, VerdictPolicy


def _gate(text: str) -> str:
    return parse_gate(text).expr


GATE_OPTIONS: tuple[Option, ...] = (
    Option("--baseline", "baseline JSON to gate against (written by --update-baseline)"),
    Option(
        "--update-baseline",
        "write the baseline from this run (atomically); gates are skipped",
        {"action": "store_const", "const": True},
    ),
    Option("--reference-model", "model of the reference run (default: --model)"),
    Option("--reference-rev", "pinned revision of a reference run computed on the fly (A/B of two revisions)"),
    Option("--gate", gate_help(), {"action": "append", "type": spec_type(_gate, "gate"), "dest_name": "gates"}),
    Option(
        "--inconclusive",
        "what an inconclusive gate (e.g. non_inferior without enough queries) does: fail "
        "the run, xfail or skip (both leave the exit status alone); stated in the summary",
        {"choices": ON_INCONCLUSIVE},
    ).with_default(VerdictPolicy.default("inconclusive")),
    Option(
        "--multiplicity",
        "correction of the session's significance-based gates (no_significant_drop) tested "
        "together: holm (Holm-Bonferroni) or none; stated in the summary",
        {"choices": MULTIPLICITY},
    ).with_default(VerdictPolicy.default("multiplicity")),
    Option(
        "--gate-endpoint",
        "gate the model as served at --endpoint: the candidate result comes from the endpoint "
        "(as `evalsuite run --endpoint`); references, baselines' reruns and the canary's reference stay local",
        {"action": "store_const", "const": True},
    ),
    Option("--reports-dir", "where results.json and report.md go", default=DEFAULT_REPORTS_DIR),
    HISTORY_OPTION,
    HISTORY_ANCHOR_OPTION,
    SUMMARY_MD_OPTION,
    Option(
        "--evalsuite-spec",
        "spec file (default: ./evalsuite.toml, else [tool.evalsuite] in ./pyproject.toml)",
        {"dest_name": "spec"},
    ),
)
