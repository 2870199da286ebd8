"""The audit as one job: its options checked, every store opened (their input errors first), every check run,
the cutover pair compared; `evalsuite audit` prints and writes the :class:`~.runner.AuditReport` this returns, and
``evalsuite.audit()`` returns it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import SpecError
from ..run.options import Option, collect
from .options import AUDIT_CLIENT_OPTIONS, AUDIT_RUN_OPTIONS, INDEX_OPTIONS, SETTING_OPTIONS

if TYPE_CHECKING:
    from ..checks import CheckOutcome
    from .runner import AuditReport

# every option of the job but the report directory, in the order `evalsuite audit --help` lists them
AUDIT_OPTIONS: tuple[Option, ...] = (*AUDIT_RUN_OPTIONS, *INDEX_OPTIONS, *AUDIT_CLIENT_OPTIONS, *SETTING_OPTIONS)


def _quiet(line: str) -> None:
    return None


def _manifest(uri: str, given: str | None) -> Path | None:
    if given:
        return Path(given)
    if uri.startswith("faiss:"):
        beside = Path(uri.removeprefix("faiss:")).expanduser().parent / "manifest.json"
        return beside if beside.is_file() else None
    return None


def run_audit_job(args: argparse.Namespace, out: Path | None, say: Callable[[str], None] = _quiet) -> AuditReport:
    """Audit ``--index`` (and ``--baseline-index``, then the cutover between them); ``say`` gets each line
    `evalsuite audit` prints as it goes. ``out``: checked writable before anything opens (None: not written)."""
    from ..run import preflight
    from ..run.pipeline import prepare
    from ..run.spec import AUTO_CHUNK_SIZE, RunSpec
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

    def target(uri: str, ids: str | None, manifest: str | None, endpoint: str | None, role: str) -> AuditTarget:
        options = SourceOptions(Path(ids) if ids else None, args.password_env, mmap)
        return AuditTarget(uri, options, _manifest(uri, manifest), endpoint, role, client)

    targets = [target(args.index_uri, args.ids, args.manifest, args.endpoint, "index")]
    if args.baseline_index:
        targets.append(
            target(args.baseline_index, args.baseline_ids, args.baseline_manifest, args.baseline_endpoint, "baseline")
        )
    elif args.baseline_endpoint or args.baseline_ids:
        raise SpecError("--baseline-endpoint and --baseline-ids need --baseline-index")
    spec = RunSpec.from_mapping(collect(args, AUDIT_RUN_OPTIONS), source="command line")
    if spec.chunk_size is None:  # the audit reads a chunk's text only to encode it: the corpus stays on disk, and
        spec = spec.replace(chunk_size=AUTO_CHUNK_SIZE)  # its index is kept for the next audit of the same bytes
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
    return AuditReport(outcomes[0], outcomes[1] if len(outcomes) > 1 else None, cutover)
