"""Canary: a served embedding endpoint against the local reference of the same pinned revision.

`evalsuite canary` (cli.py) and the pytest plugin run the same checks (checks/: one CanaryCheck
declaration each, listed in order in checks/registry.py) through one per-session CanaryContext
(context.py) built from CanarySettings (settings.py: an EndpointConfig plus the thresholds).
runner.py collects the verdicts for the CLI; report.py writes canary.json and report.md.
Options (options.py) import nothing heavy.
"""
