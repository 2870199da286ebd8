"""The result cache (checksummed entries keyed by every input) and a contract's cached scoring in it."""
