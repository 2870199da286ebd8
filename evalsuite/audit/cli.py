"""`evalsuite audit --index URI [--ids PATH] [run options] [--baseline-index URI] [--out DIR]`.

Audits what an ingest job wrote into a vector index against the pinned reference: prints each verdict as it
comes, then the verdict, the worst ids and the diagnosis; writes audit.json and report.md. Exit 0 when every
check passes, 1 when one fails, 2 on a usage or input error (an EvalsuiteError, see :mod:`evalsuite.cli`).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import SpecError
from ..run.options import OUT_OPTION, add_options, collect
from .options import AUDIT_CLIENT_OPTIONS, AUDIT_RUN_OPTIONS, INDEX_OPTIONS, SETTING_OPTIONS

if TYPE_CHECKING:
    from ..canary.checks.base import CheckOutcome

OUT = OUT_OPTION.with_default("reports/audit/<index name>")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "audit",
        help="audit a built vector index (FAISS, pgvector, LanceDB) against the reference that should have made it",
    )
    add_options(p.add_argument, (*AUDIT_RUN_OPTIONS, *INDEX_OPTIONS, *AUDIT_CLIENT_OPTIONS, *SETTING_OPTIONS, OUT))
    p.set_defaults(func=cmd_audit)


def say(text: str) -> None:
    print(text, flush=True)


def _default_out(uri: str) -> Path:
    tail = re.sub(r"\?.*$", "", uri).rstrip("/").rsplit("/", 1)[-1].split(":")[-1]
    return Path("reports") / "audit" / (re.sub(r"[^A-Za-z0-9._-]+", "-", tail).strip("-") or "index")


def _manifest(uri: str, given: str | None) -> Path | None:
    if given:
        return Path(given)
    if uri.startswith("faiss:"):
        beside = Path(uri.removeprefix("faiss:")).expanduser().parent / "manifest.json"
        return beside if beside.is_file() else None
    return None


def cmd_audit(args: argparse.Namespace) -> int:
    from ..run import preflight
    from ..run.pipeline import prepare
    from ..run.spec import AUTO_CHUNK_SIZE, RunSpec
    from .report import terminal_lines, write_reports
    from .runner import AuditReport, AuditTarget, compare_cutover, open_context, reference_encoder, run_audit
    from .settings import AuditSettings
    from .source import SourceOptions

    if not args.index_uri:
        raise SpecError("evalsuite audit needs --index URI (faiss:PATH, postgresql://..., lancedb:DIR?table=T)")
    settings = AuditSettings.from_mapping(collect(args, SETTING_OPTIONS))
    if settings.gates:  # a malformed gate is a usage error now, not after the index is read
        from .gates import audit_gates

        audit_gates(settings.gates, (), settings.max_delta)
    mmap = args.mmap is not False
    given = collect(args, AUDIT_CLIENT_OPTIONS)
    if given and not (args.endpoint or args.baseline_endpoint):
        raise SpecError(
            f"{', '.join(o.flag for o in AUDIT_CLIENT_OPTIONS if o.dest in given)} set(s) how to call a served "
            "model, but no --endpoint (or --baseline-endpoint) URL is given: add it, or drop the option"
        )
    checked = RunSpec.from_mapping(given, source="command line")  # type-checked as the run's own
    client = {k: getattr(checked, k) for k in given}
    targets = [
        AuditTarget(
            args.index_uri,
            SourceOptions(Path(args.ids) if args.ids else None, args.password_env, mmap),
            _manifest(args.index_uri, args.manifest),
            args.endpoint,
            "index",
            client,
        )
    ]
    if args.baseline_index:
        targets.append(
            AuditTarget(
                args.baseline_index,
                SourceOptions(Path(args.baseline_ids) if args.baseline_ids else None, args.password_env, mmap),
                _manifest(args.baseline_index, args.baseline_manifest),
                args.baseline_endpoint,
                "baseline",
                client,
            )
        )
    elif args.baseline_endpoint or args.baseline_ids:
        raise SpecError("--baseline-endpoint and --baseline-ids need --baseline-index")
    spec = RunSpec.from_mapping(collect(args, AUDIT_RUN_OPTIONS), source="command line")
    if spec.chunk_size is None:  # the audit reads a chunk's text only to encode it: the corpus stays on disk, and
        spec = spec.replace(chunk_size=AUTO_CHUNK_SIZE)  # its index is kept for the next audit of the same bytes
    out = Path(args.out) if args.out else _default_out(args.index_uri)
    preflight.run_paths(spec, out)  # before anything is opened or loaded
    prepared = prepare(spec)
    encoder = reference_encoder(prepared)
    contexts = [open_context(t, settings, prepared, encoder) for t in targets]  # every store's input errors first
    try:
        outcomes = []
        for ctx in contexts:
            say(
                f"audit    {ctx.role}: {ctx.info().store} {ctx.info().location} vs {prepared.model.name} @ "
                f"{prepared.contract.model_revision[:16]} on {prepared.dataset.identity.name}"
            )

            def show(v: CheckOutcome, role: str = ctx.role) -> None:
                say(f"{v.status}  {'' if role == 'index' else role + ': '}{v.message}")

            outcomes.append(run_audit(ctx, on_verdict=show))
        cutover = compare_cutover(contexts[0], contexts[1]) if len(contexts) > 1 else None
        if cutover is not None:
            say(f"{cutover.status}  {cutover.message}")
    finally:
        for ctx in contexts:
            ctx.close()
    report = AuditReport(outcomes[0], outcomes[1] if len(outcomes) > 1 else None, cutover)
    paths = write_reports(report, out)
    for line in terminal_lines(report):
        say(line)
    say(f"wrote {', '.join(str(p) for p in paths.values())}")
    return report.exit_status
