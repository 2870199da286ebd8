"""Rerankers: the reranker contract, the local cross-encoder reference, two-stage evaluation, sweeps and the
served-reranker canary. Heavy libraries are imported inside functions only."""
