"""``python -m evalsuite``: the ``evalsuite`` command, for environments whose scripts are not on PATH."""

from .cli import entry

entry()
