"""Canary: a served endpoint against the local reference of the same pinned revision, in two families of
checks: a served embedding endpoint (``--endpoint``) and a served reranker (``--reranker-endpoint``).

`evalsuite canary` (cli.py; `rerank-canary` in rerank_cli.py) and the pytest plugin run the same checks
(checks/: one CanaryCheck declaration each, listed in order in checks/registry.py, run by ``judge``
under one error policy) through one per-session context per family (context.py, rerank_context.py)
built from settings declared once (settings.py, rerank_settings.py). runner.py collects the verdicts
for the CLI; report.py writes canary.json and report.md. Options (options.py, rerank_options.py)
import nothing heavy.
"""
