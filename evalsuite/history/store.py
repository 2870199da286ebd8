"""The history directory: one JSON file per record, ``<model>/<dataset>/<revision>.json``.

A record is keyed by model, revision and dataset, so a re-run of a revision replaces its own file and
nothing else. Writers take an exclusive ``fcntl`` lock on ``.evalsuite-history.lock`` around reading
the record they replace and writing the new one (a temporary file renamed over the target,
``io.atomic_write_json``): two CI jobs writing at once each get their record in whole, and a failed
write leaves the old record (or none), never half of one. Readers take no lock: a rename is atomic.

The file names are made from the key with every character outside ``[A-Za-z0-9._-]`` replaced, so two
models could share a file name (``org/model`` and ``org_model``): the record read back names its model,
and a record of another model under the same name is an error, never overwritten.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator
from pathlib import Path

from ..base.errors import HistoryError
from ..base.io import atomic_write_json
from .record import HistoryRecord, read_record, sorted_records

LOCK_NAME = ".evalsuite-history.lock"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def slug(text: str) -> str:
    s = _UNSAFE.sub("_", text).strip(".") or "_"
    return s[:120]


class HistoryStore:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path_of(self, model: str, dataset: str, revision: str) -> Path:
        return self.root / slug(model) / slug(dataset) / f"{slug(revision)}.json"

    def check_writable(self) -> None:
        """The directory exists or can be made, and a file can be created in it; HistoryError otherwise."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / f".evalsuite-probe-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise HistoryError(
                f'history directory {self.root}: cannot be written ({exc.strerror or exc}); set history = "DIR" in '
                "evalsuite.toml or pass --history DIR with a directory this job can write"
            ) from None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """An exclusive lock on the whole history (blocking): one writer at a time."""
        import fcntl

        self.check_writable()
        fd = os.open(self.root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def put(self, record: HistoryRecord) -> Path:
        """Write ``record``, replacing the one of the same key (it keeps that one's first time); atomic, locked."""
        target = self.path_of(record.model, record.dataset, record.revision)
        with self.locked():
            if target.exists():
                earlier = read_record(target)
                if earlier.key != record.key:
                    raise HistoryError(
                        f"{target}: holds {earlier.model} @ {earlier.revision[:16]} on {earlier.dataset}, not "
                        f"{record.model} @ {record.revision[:16]} on {record.dataset} (their names map to the same "
                        "file); keep each model's history in its own directory (--history DIR)"
                    )
                record = record.with_history_of(earlier)
            try:
                return atomic_write_json(target, record.to_dict())
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EROFS, errno.ENOSPC, errno.EDQUOT):
                    raise HistoryError(
                        f"{target}: cannot be written ({exc.strerror}); the history is unchanged; free space or "
                        "pass --history DIR with a directory this job can write"
                    ) from None
                raise

    def records(self, model: str | None = None, dataset: str | None = None) -> list[HistoryRecord]:
        """Every record (of ``model`` / ``dataset`` when given) in release order; raises HistoryError for an
        unreadable one, naming its file."""
        if not self.root.is_dir():
            return []
        out = []
        for path in sorted(self.root.glob("*/*/*.json")):
            record = read_record(path)
            if (model is None or record.model == model) and (dataset is None or record.dataset == dataset):
                out.append(record)
        return sorted_records(out)

    def series(self) -> dict[tuple[str, str], list[HistoryRecord]]:
        """Every (model, dataset) with its records in release order."""
        out: dict[tuple[str, str], list[HistoryRecord]] = {}
        for r in self.records():
            out.setdefault((r.model, r.dataset), []).append(r)
        return out
