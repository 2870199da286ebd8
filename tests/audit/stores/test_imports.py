"""The database clients are imported only when a store of theirs is opened."""

from __future__ import annotations

import subprocess
import sys

CLIENTS = ("psycopg", "lancedb", "pyarrow", "pgserver")


def test_the_cli_the_plugin_and_the_store_registry_import_no_database_client() -> None:
    """Bug: ``import psycopg`` / ``import lancedb`` at the top of a store module (lancedb alone takes seconds)."""
    code = (
        "import sys, evalsuite.cli, evalsuite.pytest_plugin, evalsuite.audit.stores; "
        "evalsuite.cli.build_parser(); "
        "from evalsuite.audit.stores import store_for; "
        "[store_for(u) for u in ('postgresql://u@h:1/d?table=t', 'lancedb:/x?table=t')]; "
        f"loaded = [m for m in {CLIENTS!r} if m in sys.modules]; print(loaded); sys.exit(bool(loaded))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
