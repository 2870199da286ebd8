"""A real PostgreSQL 16 + pgvector server for the tests, from the ``pgserver`` wheel's binaries.

Not ``pgserver.get_server``: that one listens on a Unix socket with trust authentication, and the audit must be
tested over TCP with a password (a wrong one refused, never echoed). Its ``initdb`` and ``postgres`` binaries are
used directly: a cluster in a temporary directory, password authentication (scram-sha-256) on
127.0.0.1 at a free port, durability off (a test cluster), started once per test session. As root, PostgreSQL
refuses to run, so the server runs as the unprivileged user ``pgserver`` creates for the same reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUPERUSER = "postgres"
PASSWORD = "s3cret-Pa55word"  # a test cluster's password; the tests prove it never shows
START_TIMEOUT_S = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    root: Path
    port: int
    run_as: str | None
    bin: Path
    started_s: float = 0.0

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.data / "server.log"

    def uri(
        self, db: str, table: str, *, user: str = SUPERUSER, id: str = "id", vector: str = "embedding", **more: str
    ) -> str:
        query = "&".join(f"{k}={v}" for k, v in {"table": table, "id": id, "vector": vector, **more}.items())
        return f"postgresql://{user}@127.0.0.1:{self.port}/{db}?{query}"

    def connect(self, db: str = "postgres", **kw: Any) -> Any:
        import psycopg

        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=SUPERUSER, password=PASSWORD, dbname=db, autocommit=True, **kw
        )

    def _run(self, *args: str) -> None:
        kw: dict[str, Any] = {"user": self.run_as} if self.run_as else {}
        done = subprocess.run([str(a) for a in args], capture_output=True, text=True, check=False, **kw)
        if done.returncode != 0:
            raise RuntimeError(
                f"{Path(args[0]).name} failed ({done.returncode}): {done.stdout[-1500:]}{done.stderr[-1500:]}"
            )

    def start(self) -> None:
        """``postgres`` itself as a child of this process (not ``pg_ctl``, which detaches it), so it dies with a
        killed test run (SIGTERM on the parent's death, Linux), and waited for until it accepts a connection."""
        import psycopg

        kw: dict[str, Any] = {"user": self.run_as} if self.run_as else {}
        self._log = open(self.log, "ab")  # noqa: SIM115 - held open for the server's lifetime
        self.proc = subprocess.Popen(
            [
                str(self.bin / "postgres"),
                "-D",
                str(self.data),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-k",
                str(self.root / "sock"),
                "-c",
                "fsync=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "synchronous_commit=off",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # runs after the switch to run_as, which would clear it
            **kw,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}")
            try:
                self.connect().close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)  # immediate shutdown: a test cluster keeps nothing
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)
        if getattr(self, "_log", None) is not None:
            self._log.close()
        shutil.rmtree(self.root, ignore_errors=True)


def _die_with_parent() -> None:
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start_server() -> PgServer:
    """initdb, then postgres started and waited for (about 2 s); the caller stops it."""
    from pgserver._commands import POSTGRES_BIN_PATH

    run_as = None
    root = Path(tempfile.mkdtemp(prefix="evalsuite-pg-"))
    if os.geteuid() == 0:
        from pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

        run_as = "pgserver"
        entry = ensure_user_exists(run_as)
        ensure_prefix_permissions(POSTGRES_BIN_PATH)
        ensure_folder_permissions(POSTGRES_BIN_PATH, 0o055)
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", 0o044)
        root.chmod(0o711)
    server = PgServer(root=root, port=_free_port(), run_as=run_as, bin=POSTGRES_BIN_PATH)
    for d in (server.data, root / "sock"):
        d.mkdir(mode=0o700)
    pwfile = root / "pwfile"
    pwfile.write_text(PASSWORD + "\n")
    pwfile.chmod(0o600)
    if run_as:
        for p in (server.data, root / "sock", pwfile):
            os.chown(p, entry.pw_uid, entry.pw_gid)
    t0 = time.monotonic()
    try:
        server._run(
            POSTGRES_BIN_PATH / "initdb",
            "-D",
            server.data,
            "-U",
            SUPERUSER,
            "--pwfile",
            pwfile,
            "-A",
            "scram-sha-256",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        )
        pwfile.unlink()
        server.start()
    except BaseException:
        tail = server.log.read_text(errors="replace")[-1500:] if server.log.exists() else ""
        server.stop()
        if tail:
            raise RuntimeError(f"PostgreSQL did not start: {tail}") from None
        raise
    server.started_s = time.monotonic() - t0
    return server
