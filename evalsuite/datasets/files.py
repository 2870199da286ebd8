"""Reading dataset files as lines: compression by content, UTF-8 with an optional BOM, LF or CRLF.

A file is found under its plain name or with ``.gz``, ``.bz2`` or ``.xz`` appended (BEIR ships
``corpus.jsonl.gz``); when several exist the plain file wins and the others are named in a warning.
Compression is recognised by the file's first bytes, not its name: a plain-named gzip file is read
transparently, and a ``.gz`` name over other bytes (an HTML error page saved by a failed download)
is refused. The sha256 recorded for a file is the one of its decompressed bytes, so compressing or
decompressing a dataset does not change its identity.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from ..base.errors import DatasetError

COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")
_MAGIC = {".gz": b"\x1f\x8b", ".bz2": b"BZh", ".xz": b"\xfd7zXZ\x00"}
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_BOM = "\ufeff"
_BOM_BYTES = _BOM.encode()


def logical_name(path: Path) -> str:
    """The file's name without a compression suffix (``corpus.jsonl.gz`` -> ``corpus.jsonl``)."""
    return path.name[: -len(path.suffix)] if path.suffix in COMPRESSED_SUFFIXES else path.name


def find_variant(plain: Path) -> tuple[Path | None, list[str]]:
    """The file to read for ``plain`` (itself or a compressed sibling) and warnings about ignored siblings."""
    found = [p for p in (plain, *(plain.with_name(plain.name + s) for s in COMPRESSED_SUFFIXES)) if p.exists()]
    if not found:
        return None, []
    chosen, ignored = found[0], found[1:]
    if not ignored:
        return chosen, []
    return chosen, [
        (
            f"{chosen} and {', '.join(p.name for p in ignored)} both exist; reading {chosen.name} only "
            "(delete the other to silence this)"
        )
    ]


_UNSUPPORTED = {
    b"PK\x03\x04": "a zip archive; unzip it",
    b"\x28\xb5\x2f\xfd": "zstd-compressed; decompress it (unzstd) or recompress it with gzip",
}


def _compression(path: Path, head: bytes) -> str | None:
    """The compression suffix whose magic bytes start ``head``; a mismatch with a compressed name is an error."""
    for magic, what in _UNSUPPORTED.items():
        if head.startswith(magic):
            raise DatasetError(path, f"the file is {what} (only plain, .gz, .bz2 and .xz files are read)")
    detected = next((s for s, magic in _MAGIC.items() if head.startswith(magic)), None)
    if path.suffix in COMPRESSED_SUFFIXES and detected != path.suffix:
        shown = head[:16].decode("latin-1").encode("unicode_escape").decode("ascii")
        what = f"{detected} data" if detected else f"not {path.suffix} data (it starts with {shown!r})"
        raise DatasetError(
            path,
            f"the name says {path.suffix} but the file is {what}; download it again or rename it to match its content",
        )
    return detected


def _open_raw(path: Path) -> tuple[BinaryIO, str | None]:
    """The file opened as bytes, and its compression as its first bytes tell."""
    if not path.exists():
        raise DatasetError(path, "file not found")
    if path.is_dir():
        raise DatasetError(path, "is a directory, expected a file")
    try:
        fh = open(path, "rb")  # noqa: SIM115 - returned open; the caller closes it
    except OSError as exc:
        raise DatasetError(path, f"cannot be read ({exc.strerror or exc}); check its permissions") from None
    try:
        head = fh.read(8)
        fh.seek(0)
        return fh, _compression(path, head)
    except BaseException:
        fh.close()
        raise


def compression(path: Path) -> str | None:
    """``.gz``, ``.bz2`` or ``.xz`` as the file's first bytes tell, or None for a plain file."""
    fh, kind = _open_raw(path)
    fh.close()
    return kind


def _open(path: Path) -> BinaryIO:
    fh, kind = _open_raw(path)
    if kind == ".gz":
        return gzip.GzipFile(fileobj=fh, mode="rb")  # type: ignore[return-value]
    if kind == ".bz2":
        return bz2.BZ2File(fh, mode="rb")  # type: ignore[return-value]
    if kind == ".xz":
        return lzma.LZMAFile(fh, mode="rb")  # type: ignore[return-value]
    return fh


class Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...


@dataclass
class TextFile:
    """One dataset file read line by line; ``sha256`` is set once every line has been read.

    ``span`` is the ``(offset, length)`` in the decompressed bytes of the line last yielded, without its
    line ending (and without the BOM of line 1): where to read that line again. ``tee``, when set,
    receives every decompressed byte as it is read (a spool file that those offsets then index).
    """

    path: Path
    sha256: str = ""
    tee: Sink | None = None
    span: tuple[int, int] = (0, 0)

    def lines(self) -> Iterator[tuple[int, str]]:
        """Yield ``(line number, text)`` for every line, without its line ending; a leading BOM is dropped."""
        h = hashlib.sha256()
        ln = offset = 0
        fh = _open(self.path)
        try:
            while True:
                try:
                    raw = fh.readline()
                except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as exc:
                    raise DatasetError(
                        self.path,
                        f"corrupt or truncated compressed data after line {ln} ({exc}); "
                        "download or compress the file again",
                        ln + 1,
                    ) from None
                if not raw:
                    break
                ln += 1
                h.update(raw)
                if self.tee is not None:
                    self.tee.write(raw)
                text = self._decode(raw, ln)
                bom = len(_BOM_BYTES) if ln == 1 and raw.startswith(_BOM_BYTES) else 0
                self.span = (offset + bom, len(raw.rstrip(b"\r\n")) - bom)
                offset += len(raw)
                yield ln, text
        finally:
            fh.close()
        self.sha256 = h.hexdigest()

    def _decode(self, raw: bytes, ln: int) -> str:
        if ln == 1 and raw.startswith(_UTF16_BOMS):
            raise DatasetError(
                self.path,
                "the file is UTF-16 (it starts with a UTF-16 byte order mark); re-encode it "
                "as UTF-8, e.g. iconv -f UTF-16 -t UTF-8",
                ln,
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(
                self.path,
                f"not valid UTF-8 ({exc.reason} at byte {exc.start} of the line); re-encode the file as UTF-8",
                ln,
            ) from None
        if ln == 1 and text.startswith(_BOM):
            text = text[1:]
        return text.rstrip("\r\n")
