"""`evalsuite late --late-model DIR --rerank-depth 100 [run options]`: MaxSim re-ranking of the first stage,
both stages' metrics, the gain, and the memory per document; late.json and report.md."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.jobs import Job
from ..contract import DTYPES
from ..retrieval.retrievers.params import SPECIAL_POLICIES
from ..run.options import OUT_OPTION, RUN_OPTIONS, Option, collect, int_at_least

if TYPE_CHECKING:
    from ..encode.tokens import TokenEncoder
    from ..run.result import Result
    from .served import TokenAgreement

LATE_OPTIONS: tuple[Option, ...] = (
    Option(
        "--late-model", "model directory whose last hidden states give the token vectors", {"dest_name": "late_model"}
    ),
    Option("--late-rev", "pinned revision of --late-model", {"dest_name": "late_rev"}),
    Option(
        "--late-projection",
        "file in the model directory with a linear projection state dict (weight [dim, hidden])",
        {"dest_name": "projection"},
    ),
    Option(
        "--late-special-tokens",
        "special tokens' vectors: drop, keep, or cls (keep only the first)",
        {"choices": SPECIAL_POLICIES, "dest_name": "special_tokens"},
    ).with_default("drop"),
    Option("--late-max-length", "max tokens per text", {"type": int_at_least(2), "dest_name": "late_max_length"}),
    Option(
        "--late-storage-dtype",
        "dtype the index would store token vectors in (memory report)",
        {"choices": DTYPES, "dest_name": "storage_dtype"},
    ).with_default("float16"),
    Option(
        "--late-endpoint",
        "served token-level output to compare token by token (vLLM: the base URL whose "
        "/pooling answers task token_embed)",
        {"dest_name": "late_endpoint"},
    ),
    Option("--late-served-model", "served model name sent with --late-endpoint", {"dest_name": "late_served_model"}),
    Option(
        "--late-token-cos-min",
        "min cosine of served vs reference token vectors",
        {"type": float, "dest_name": "late_token_cos_min"},
    ).with_default(0.999),
    Option(
        "--late-compare-texts",
        "documents sent to --late-endpoint",
        {"type": int_at_least(1), "dest_name": "late_compare_texts"},
    ).with_default(32),
)


def options() -> tuple[Option, ...]:
    from ..rerank.options import DEPTH_OPTION

    return (*RUN_OPTIONS, *LATE_OPTIONS, DEPTH_OPTION, OUT_OPTION.with_default("reports/<dataset>/<model>+late"))


def cmd_late(args: argparse.Namespace) -> int:
    from ..base.errors import SpecError
    from ..base.io import atomic_write_json, atomic_write_text
    from ..encode.tokens import TokenEncoder, build_late_contract
    from ..model import resolve_model
    from ..reports.run_reports import default_run_dir
    from ..rerank.reports import two_stage_markdown
    from ..rerank.run import run_first_stage
    from ..run.spec import RunSpec
    from .evaluate import evaluate_late

    late = collect(args, LATE_OPTIONS)
    if "late_model" not in late:
        raise SpecError("late needs --late-model DIR (the model whose token vectors are scored by MaxSim)")
    depths = list(args.depths or (100,))
    spec = RunSpec.from_mapping(collect(args), source="command line")
    info = resolve_model(late["late_model"], revision=late.get("late_rev"))
    contract = build_late_contract(
        info,
        projection=late.get("projection"),
        special_tokens=late.get("special_tokens", "drop"),
        max_length=late.get("late_max_length"),
        storage_dtype=late.get("storage_dtype", "float16"),
    )
    _, first = run_first_stage(spec, depths)
    encoder = TokenEncoder(info, contract, device=spec.device)
    result = evaluate_late(first, encoder, depths)
    out = (
        Path(args.out)
        if args.out
        else Path(str(default_run_dir(first.dataset.identity.name, first.contract.model)) + "+late")
    )
    md = two_stage_markdown(result.stages).replace("# evalsuite two-stage run", "# evalsuite late interaction", 1)
    md += f"\n## Memory per document\n\n{result.memory.describe()}\n"
    report = result.to_dict()
    failed = False
    if "late_endpoint" in late:
        agreement = served_agreement(late, encoder, first)
        report["served_tokens"] = {
            **agreement.__dict__,
            "count_mismatches": [list(m) for m in agreement.count_mismatches],
        }
        failed = not agreement.passed(late.get("late_token_cos_min", 0.999))
        md += f"\n## Served token vectors\n\n{'FAIL' if failed else 'PASS'}: {agreement.describe()}\n"
        print(f"{'FAIL' if failed else 'PASS'}  served token vectors: {agreement.describe()}")
    paths = [atomic_write_json(out / "late.json", report), atomic_write_text(out / "report.md", md)]
    for s in result.stages:
        print(f"depth {s.depth}")
        for d in s.deltas:
            print(f"  {d.describe()}")
    print(f"memory  {result.memory.describe()}")
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 1 if failed else 0


def served_agreement(late: dict[str, Any], encoder: TokenEncoder, first: Result) -> TokenAgreement:
    """The first documents of the corpus through the served token output and the local encoder."""
    from ..encode.endpoint import EndpointConfig, EndpointEncoder
    from ..encode.response import Expectation
    from .served import compare_tokens, fetch_token_embeddings

    ds = first.dataset
    texts = [ds.corpus[d] for d in ds.doc_ids[: late.get("late_compare_texts", 32)]]
    config = EndpointConfig(
        url=late["late_endpoint"], model=late.get("late_served_model"), concurrency=1, max_response_bytes=64 << 20
    )
    with EndpointEncoder(config, Expectation(dim=encoder.contract.dim, normalized=False)) as http:
        served = fetch_token_embeddings(http, [encoder.contract.doc_prefix + t for t in texts], encoder.contract.dim)
    return compare_tokens(served, encoder.encode(texts))


JOB = Job(
    "late",
    help="late interaction: MaxSim re-ranking of the first stage's top N from token vectors, with the memory per "
    "document",
    options=options,
    run=cmd_late,
    exit_codes={0: "scored (and a served token output agreed)", 1: "a served token output disagreed"},
)
