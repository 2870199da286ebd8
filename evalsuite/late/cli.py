"""`evalsuite late --late-model DIR --rerank-depth 100 [run options]`: MaxSim re-ranking of the first stage,
both stages' metrics, the gain, and the memory per document; late.json and report.md."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..contract import DTYPES
from ..options import OUT_OPTION, RUN_OPTIONS, Option, add_options, collect, int_at_least
from .contract import SPECIAL_POLICIES

LATE_OPTIONS: tuple[Option, ...] = (
    Option("--late-model", "model directory whose last hidden states give the token vectors",
           {"dest_name": "late_model"}),
    Option("--late-rev", "pinned revision of --late-model", {"dest_name": "late_rev"}),
    Option("--late-projection", "file in the model directory with a linear projection state dict (weight [dim, hidden])",
           {"dest_name": "projection"}),
    Option("--late-special-tokens", "special tokens' vectors: drop, keep, or cls (keep only the first)",
           {"choices": SPECIAL_POLICIES, "dest_name": "special_tokens"}).with_default("drop"),
    Option("--late-max-length", "max tokens per text", {"type": int_at_least(2), "dest_name": "late_max_length"}),
    Option("--late-storage-dtype", "dtype the index would store token vectors in (memory report)",
           {"choices": DTYPES, "dest_name": "storage_dtype"}).with_default("float16"),
)


def register(subparsers: Any) -> None:
    from ..rerank.options import DEPTH_OPTION

    p = subparsers.add_parser("late", help="late interaction: MaxSim re-ranking of the first stage's top N from token "
                              "vectors, with the memory per document")
    add_options(p.add_argument, (*RUN_OPTIONS, *LATE_OPTIONS, DEPTH_OPTION,
                                 OUT_OPTION.with_default("reports/<dataset>/<model>+late")))
    p.set_defaults(func=cmd_late)


def cmd_late(args: argparse.Namespace) -> int:
    from ..errors import SpecError
    from ..io import atomic_write_json, atomic_write_text
    from ..model import resolve_model
    from ..reports.run_reports import default_run_dir
    from ..rerank.reports import two_stage_markdown
    from ..rerank.run import run_first_stage
    from ..spec import RunSpec
    from .encoder import TokenEncoder, build_late_contract
    from .evaluate import evaluate_late

    late = collect(args, LATE_OPTIONS)
    if "late_model" not in late:
        raise SpecError("late needs --late-model DIR (the model whose token vectors are scored by MaxSim)")
    depths = list(args.depths or (100,))
    spec = RunSpec.from_mapping(collect(args), source="command line")
    info = resolve_model(late["late_model"], revision=late.get("late_rev"))
    contract = build_late_contract(info, projection=late.get("projection"),
                                   special_tokens=late.get("special_tokens", "drop"),
                                   max_length=late.get("late_max_length"),
                                   storage_dtype=late.get("storage_dtype", "float16"))
    _, first = run_first_stage(spec, depths)
    result = evaluate_late(first, TokenEncoder(info, contract, device=spec.device), depths)
    out = Path(args.out) if args.out else Path(str(default_run_dir(first.dataset.identity.name, first.contract.model))
                                               + "+late")
    md = two_stage_markdown(result.stages).replace("# evalsuite two-stage run", "# evalsuite late interaction", 1)
    md += f"\n## Memory per document\n\n{result.memory.describe()}\n"
    paths = [atomic_write_json(out / "late.json", result.to_dict()), atomic_write_text(out / "report.md", md)]
    for s in result.stages:
        print(f"depth {s.depth}")
        for d in s.deltas:
            print(f"  {d.describe()}")
    print(f"memory  {result.memory.describe()}")
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0
