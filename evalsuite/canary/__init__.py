"""Canary: a served embedding endpoint against the local reference of the same pinned revision.

`evalsuite canary` (cli.py) and the pytest plugin run the same checks (checks.py) through one
per-session CanaryContext (context.py). Options (options.py) import nothing heavy.
"""
