"""The reranker family of the canary: its settings, options, per-session context, checks and `rerank-canary` alias."""
