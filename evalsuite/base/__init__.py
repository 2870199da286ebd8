"""Plumbing every layer uses: typed errors, atomic writes, the one verdict type, the version, optional extras, the bundled data."""
