"""Rerankers: the reranker contract, the local cross-encoder reference, the score cache, two-stage evaluation,
sweeps, and a served reranker's API shapes and client (its canary checks are the canary's:
:mod:`evalsuite.canary.reranker.checks`). Imports neither :mod:`evalsuite.canary` nor :mod:`evalsuite.late`, which
sit above it. Heavy libraries are imported inside functions only."""
