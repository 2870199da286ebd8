"""The decompressed copy ("spool") of a compressed corpus that a chunked run reads from disk by byte offset."""

from __future__ import annotations

import contextlib
import os
import tempfile
import weakref
from pathlib import Path
from typing import Protocol

from ..base.errors import SpoolError

_SPOOL_BUFFER = 1 << 20


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


class _Writer(Protocol):
    def write(self, data: bytes, /) -> object: ...

    def close(self) -> None: ...


def _open_spool(fd: int) -> _Writer:
    return os.fdopen(fd, "wb", buffering=_SPOOL_BUFFER)


class Spool:
    """The decompressed copy of a compressed corpus, written while it is indexed; the file is deleted
    when the last corpus using it is collected (or at exit). A copy unpickled in another process
    only borrows the file: it never deletes it."""

    def __init__(self, path: Path, source: Path, fh: _Writer | None, owner: bool) -> None:
        self.path = path
        self.source = source
        self._fh = fh
        self._cleanup = weakref.finalize(self, _remove, str(path)) if owner else None

    @classmethod
    def create(cls, spool_dir: Path | None, source: Path) -> Spool:
        where = Path(spool_dir) if spool_dir is not None else Path(tempfile.gettempdir())
        try:
            where.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix="corpus-", suffix=".jsonl", dir=where)
        except OSError as exc:
            raise SpoolError(
                f"cannot create the decompressed copy of {source} in {where} ({exc.strerror or exc}); make "
                "the directory writable or pass --store-dir on a writable disk with room for the "
                "decompressed corpus (or decompress the file yourself)"
            ) from None
        return cls(Path(name), source, _open_spool(fd), owner=True)

    def _error(self, exc: OSError) -> SpoolError:
        self.discard()
        return SpoolError(
            f"cannot write the decompressed copy of {self.source} to {self.path} ({exc.strerror or exc}); free "
            f"disk space in {self.path.parent} or pass --store-dir on a disk with room for the decompressed "
            "corpus (or decompress the file yourself)"
        )

    def write(self, data: bytes) -> None:
        if self._fh is None:
            raise SpoolError(f"the decompressed copy {self.path} of {self.source} was already closed")
        try:
            self._fh.write(data)
        except OSError as exc:
            raise self._error(exc) from None

    def close(self) -> None:
        """Flush and close the file (it stays until the corpus is collected)."""
        if self._fh is not None:
            try:
                self._fh.close()
            except OSError as exc:
                self._fh = None
                raise self._error(exc) from None
            self._fh = None

    def discard(self) -> None:
        """Close and delete the file now (a failed read)."""
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None
        if self._cleanup is not None:
            self._cleanup()

    def __reduce__(self) -> tuple[object, ...]:
        return (Spool, (self.path, self.source, None, False))
