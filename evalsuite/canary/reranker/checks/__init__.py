"""The reranker canary's checks, one Check declaration each (listed in canary/reranker/registry.py)."""
