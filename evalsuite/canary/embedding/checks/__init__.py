"""The embedding canary's checks, one CanaryCheck declaration each (listed in canary/registry.py)."""
