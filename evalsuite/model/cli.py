"""`evalsuite model-rev [PATH] [--tokenizer]`: print the revision that pins a model directory (or a cached hub model),
the value `--model-rev` takes. Exit 0, or 2 for a directory that is not a model (the message names it)."""

from __future__ import annotations

import argparse

from ..base.jobs import Job, Positional
from ..base.options import Option

OPTIONS: tuple[Option, ...] = (
    Option("--tokenizer", "print the tokenizer revision instead", {"action": "store_const", "const": True}),
)


def cmd_model_rev(args: argparse.Namespace) -> int:
    from . import resolve_model

    info = resolve_model(args.path)
    if args.tokenizer:
        print(info.tokenizer_revision)
    else:
        print(info.revision)
    return 0


JOB = Job(
    "model-rev",
    help="print the revision that pins a model directory (or cached hub model)",
    options=lambda: OPTIONS,
    run=cmd_model_rev,
    exit_codes={0: "the revision printed"},
    positional=Positional("path", "model directory or hub id (default: bundled model)"),
)
