"""JSON-lines records and the checks every id and text goes through, whatever the format.

Ids end up in TREC run lines (``qid Q0 docid rank score tag``) that trec_eval and ranx split on
whitespace, so an id may not be empty or hold whitespace or control characters. JSON integer ids
(some collections write ``"_id": 123``) become the decimal string, which is how the same id reads in
a qrels file; a float id is refused because ``1.0`` and ``1`` would not match.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from ..base.errors import DatasetError
from .files import TextFile
from .model import EmptyPolicy

_ID_HINT = "ids appear in TREC run lines, which trec_eval and ranx split on whitespace; rename the id"


def records(source: TextFile) -> Iterator[tuple[int, Mapping[str, object]]]:
    """Yield ``(line number, object)`` for every non-blank line of a JSON-lines file."""
    path = source.path
    for ln, line in source.lines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line, strict=False)  # raw tabs inside strings are common in exported texts
        except json.JSONDecodeError as exc:
            reason = exc.msg.removesuffix(" at")
            hint = (
                "; the file seems to use CR (old Mac) line endings: convert them to LF" if "\r" in line.strip() else ""
            )
            raise DatasetError(
                path, f"invalid JSON ({reason} at column {exc.colno}); each line must be one JSON object{hint}", ln
            ) from None
        except (ValueError, RecursionError) as exc:
            raise DatasetError(
                path, f"invalid JSON ({type(exc).__name__}: {str(exc)[:120]}); each line must be one JSON object", ln
            ) from None
        if not isinstance(obj, dict):
            hint = (
                "; the line is one JSON array: write one object per line (JSON lines)"
                if isinstance(obj, list) and obj and all(isinstance(o, dict) for o in obj)
                else ""
            )
            raise DatasetError(path, f"expected a JSON object, got {type(obj).__name__}{hint}", ln)
        yield ln, obj


def check_id(path: object, ln: int | None, value: object, what: str) -> str:
    """A valid id as a string: integers converted, surrounding whitespace stripped, anything unsafe refused."""
    if isinstance(value, bool) or value is None:
        raise DatasetError(path, f"{what} must be a string or an integer, got {json.dumps(value)}", ln)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        raise DatasetError(
            path, f"{what} {value!r} is a float; write ids as strings (or integers) so they match the qrels exactly", ln
        )
    if not isinstance(value, str):
        raise DatasetError(path, f"{what} must be a string or an integer, got {type(value).__name__}", ln)
    ident = value.strip()
    if not ident:
        raise DatasetError(path, f"empty {what}; every record needs a non-empty id", ln)
    if ident.isprintable() and " " not in ident:  # fast path: isprintable() is False for every other space
        bad = None
    else:
        bad = next((c for c in ident if c.isspace() or not c.isprintable()), None)
    if bad is not None:
        raise DatasetError(
            path,
            f"{what} {_cut(ident)!r} contains {_describe(bad)}; {_ID_HINT} (e.g. replace it "
            "with '_') consistently in the corpus, queries and qrels",
            ln,
        )
    _check_encodable(path, ln, ident, what)
    return ident


def check_text(path: object, ln: int | None, value: object, what: str) -> str:
    """A text field as a string (``null`` reads as empty), stripped; an unencodable text is refused."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DatasetError(path, f"{what} must be a string, got {type(value).__name__}", ln)
    _check_encodable(path, ln, value, what)
    return value


def text_field(path: Path, ln: int | None, obj: Mapping[str, object], key: str, role: str) -> str:
    """The required text field ``key`` of a record (present; its value may be empty or null)."""
    if key not in obj:
        keys = ", ".join(repr(k) for k in list(obj)[:8])
        raise DatasetError(
            path,
            f"missing field {key!r} (the record has {keys or 'no fields'}); a {role} record needs '_id' and {key!r}",
            ln,
        )
    return check_text(path, ln, obj[key], f"field {key!r}")


def id_field(path: Path, ln: int, obj: Mapping[str, object], role: str) -> str:
    if "_id" not in obj:
        keys = ", ".join(repr(k) for k in list(obj)[:8])
        raise DatasetError(
            path, f"missing field '_id' (the record has {keys or 'no fields'}); each {role} record needs '_id'", ln
        )
    return check_id(path, ln, obj["_id"], f"{role} id")


TEXT_KEYS = ("_id", "title", "text")
NO_DOCUMENTS = "no documents; the file holds no JSON lines"


def duplicate_id(path: object, ln: int, ident: str, first: int, role: str, where: str = "line") -> DatasetError:
    """The error for an id seen before (on line ``first``): ids must be unique."""
    return DatasetError(path, f"duplicate {role} id {ident!r} (first on {where} {first}); ids must be unique", ln)


def document_text(path: Path, ln: int | None, obj: Mapping[str, object]) -> str:
    """A document record's text as the model sees it: its title and text joined (:func:`join_title`)."""
    return join_title(
        check_text(path, ln, obj.get("title"), "field 'title'"), text_field(path, ln, obj, "text", "document")
    )


def documents(
    source: TextFile, policy: EmptyPolicy, seen: Callable[[str, int], None]
) -> Iterator[tuple[int, str, str, dict[str, str] | None]]:
    """``(line, id, text, metadata or None)`` for every document record of a corpus file, each checked:
    ``seen(id, line)`` is called before the record's text is read (it refuses a duplicate id), and an
    empty document (no title, no text) is refused here under ``policy='error'``."""
    path = source.path
    for ln, obj in records(source):
        did = id_field(path, ln, obj, "document")
        seen(did, ln)
        text = document_text(path, ln, obj)
        if not text and policy == "error":
            raise DatasetError(
                path,
                f"document {did!r} has empty title and text; remove it or give it text "
                "(--empty-docs keep encodes it as the empty string, skip drops it)",
                ln,
            )
        yield ln, did, text, (metadata(obj) or None) if len(obj) > 2 else None


def metadata(obj: Mapping[str, object], skip: tuple[str, ...] = TEXT_KEYS) -> dict[str, str]:
    """A record's metadata fields as strings: every scalar field but the id and texts (``"topic":
    "finance"``, ``"year": 2020`` as ``"2020"``), and the scalars of a nested object one level down as
    ``parent.key`` (BEIR corpora keep a ``metadata`` object). Lists, nulls and deeper objects are left out:
    a slice groups queries by one value each."""
    out: dict[str, str] = {}
    for key, value in obj.items():
        if key in skip:
            continue
        if isinstance(value, dict):
            for sub, v in value.items():
                if _scalar(v):
                    out[f"{key}.{sub}"] = _as_text(v)
        elif _scalar(value):
            out[key] = _as_text(value)
    return out


def _scalar(value: object) -> bool:
    return isinstance(value, (str, int, float, bool))


def _as_text(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def join_title(title: str, text: str) -> str:
    """Document text as the model sees it, as BEIR and MTEB build it: ``(title + " " + text).strip()``."""
    return f"{title} {text}".strip() if title else text.strip()


def _check_encodable(path: object, ln: int | None, value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DatasetError(
            path,
            f"{what} holds an unpaired surrogate ({value[exc.start]!r} at character "
            f"{exc.start}); fix the \\u escape in the file",
            ln,
        ) from None


def _describe(c: str) -> str:
    names = {" ": "a space", "\t": "a tab", "\n": "a newline", "\r": "a carriage return"}
    return names.get(c, f"the character U+{ord(c):04X}")


def _cut(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[:n] + "…"
