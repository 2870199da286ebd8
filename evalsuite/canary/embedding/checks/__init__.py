"""The embedding canary's checks, one Check declaration each (listed in canary/embedding/registry.py)."""
