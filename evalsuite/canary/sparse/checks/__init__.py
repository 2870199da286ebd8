"""The sparse canary's checks, one Check declaration each (listed in canary/sparse/registry.py)."""
