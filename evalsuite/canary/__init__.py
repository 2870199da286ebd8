"""Canary: a served endpoint against the local reference of the same pinned revision, in two families of
checks: a served embedding endpoint (``--endpoint``, ``embedding/``) and a served reranker
(``--reranker-endpoint``, ``reranker/``).

`evalsuite canary` (cli.py; `rerank-canary` in reranker/cli.py) and the pytest plugin run the same checks
(each family's ``checks/``: one ``evalsuite.checks.Check`` declaration each, listed in order in the family's
``registry.py``, run by the check engine's ``judge`` under one error policy) through one per-session context per
family (``embedding/context.py``, ``reranker/context.py``) built from settings declared once (each family's
``settings.py``). runner.py collects the verdicts for the CLI; report.py writes canary.json and report.md; output.py
prints them. Options (each family's ``options.py``) import nothing heavy.
"""
