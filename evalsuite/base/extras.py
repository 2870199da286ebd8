"""Optional dependencies (the package's extras): a missing one is a usage error that names its install.

``pyproject.toml`` declares each extra; :data:`EXTRAS` maps the module a feature imports to the extra
that installs it, so every message says the same ``pip install 'evalsuite[...]'``.
"""

from __future__ import annotations

from importlib.util import find_spec

from .errors import MissingExtra

EXTRAS = {"ray": "ray", "psycopg": "pgvector", "lancedb": "lancedb"}  # module -> the extra that installs it


def require(module: str, feature: str) -> None:
    """Raise :class:`MissingExtra` when ``module`` (needed by ``feature``) is not installed; imports nothing."""
    try:
        found = find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module without a spec
        found = False
    if not found:
        extra = EXTRAS[module]
        raise MissingExtra(
            f"{feature} needs {module}, which is not installed: pip install 'evalsuite[{extra}]' (or drop {feature})"
        )
