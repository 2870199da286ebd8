"""The release history's options, declared once: the pytest plugin's gating options and `evalsuite run` read them."""

from __future__ import annotations

from ..run.options import Option

HISTORY_OPTION = Option(
    "--history",
    "release history directory: the session adds one record per dataset (model, revision, metrics with CIs, "
    "per-query scores, verdicts); max_drop_from_first, max_drop_from_best and trend gates compare with it "
    '(or history = "DIR" in evalsuite.toml)',
)
HISTORY_ANCHOR_OPTION = Option(
    "--history-anchor", "the revision max_drop_from_first compares with (default: the first recorded release)"
)
SUMMARY_MD_OPTION = Option(
    "--summary-md", "write a Markdown verdict summary here (also appended to $GITHUB_STEP_SUMMARY when it is set)"
)
