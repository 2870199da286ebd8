"""`evalsuite verify --manifest index/manifest.json --endpoint URL [--api-key-env VAR] [--served-model NAME]`.

Exit 0 when the deployment matches the manifest, 1 when it does not (each finding printed, the cause
named where the fingerprint alone can tell), 2 on a usage error (a manifest without a fingerprint
among them). Fits a readiness probe: a few requests, numpy and HTTP only.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from ..base.jobs import Job
from ..canary.embedding.options import CANARY_OPTIONS
from ..run.options import Option

_CLIENT = ("--endpoint", "--api-key-env", "--served-model", "--endpoint-timeout")


def _options() -> tuple[Option, ...]:
    def verify_help(o: Option) -> str:
        if o.flag == "--api-key-env":
            return "verify: NAME of the environment variable holding the API key (the key is never printed)"
        return "verify: " + o.help.removeprefix("canary: ")

    shared = tuple(dataclasses.replace(o, help=verify_help(o)) for o in CANARY_OPTIONS if o.flag in _CLIENT)
    return (
        Option("--manifest", "verify: the index's manifest.json (written by `evalsuite run`)", {"metavar": "PATH"}),
        *shared,
        Option(
            "--min-cosine",
            "verify: min per-text cosine between served vectors and the manifest's fingerprint (default 0.99)",
            {"type": float, "metavar": "X"},
        ),
    )


def cmd_verify(args: argparse.Namespace) -> int:
    from ..base.errors import SpecError
    from ..encode.endpoint import EndpointConfig, EndpointEncoder, Secret
    from ..encode.response import Expectation
    from ..encode.secret import redact
    from .checks import MIN_COSINE, Manifest, verify

    if not args.manifest or not args.endpoint:
        raise SpecError("verify needs --manifest PATH and --endpoint URL")
    min_cosine = MIN_COSINE if args.min_cosine is None else float(args.min_cosine)
    if not 0.0 < min_cosine <= 1.0:
        raise SpecError(f"--min-cosine must be in (0, 1], got {min_cosine}")
    manifest = Manifest.load(Path(args.manifest))
    key = Secret.from_env(args.api_key_env, "empty; export it before running verify")
    config = EndpointConfig(
        url=args.endpoint, api_key=key, **({"timeout": args.endpoint_timeout} if args.endpoint_timeout else {})
    )
    dim = int(manifest.fingerprint.vectors.shape[1])

    def client(model: str | None, aliases: frozenset[str]) -> EndpointEncoder:
        return EndpointEncoder(
            dataclasses.replace(config, model=model), Expectation(dim=dim, normalized=False, models=aliases)
        )

    with client(None, frozenset()) as probe:
        findings = verify(manifest, probe, client, args.served_model, min_cosine)
    for f in findings:
        print(redact(f"{'PASS' if f.passed else 'FAIL'}  {f.message}"), flush=True)
    failed = [f.check for f in findings if not f.passed]
    print(f"{'MISMATCH: ' + ', '.join(failed) if failed else 'match'}: {args.endpoint} against {manifest.path}")
    return 1 if failed else 0


JOB = Job(
    "verify",
    help="check a served /v1/embeddings deployment against an index manifest's fingerprint (no model)",
    options=_options,
    run=cmd_verify,
    exit_codes={0: "the deployment matches the manifest", 1: "it does not (each finding printed)"},
)
