"""Qrels parsing: BEIR TSV with a header row, or TREC ``qid iteration docid relevance``.

Relevance is an integer; a decimal with a zero fraction (``1.0``, what spreadsheets export) reads
as that integer, anything else (``0.5``, ``high``, ``nan``) is refused. Negative relevance (TREC's
``-2`` for spam) is kept here and read as 0 (judged, not relevant) when the dataset is assembled.
"""

from __future__ import annotations

import math

from ..base.errors import DatasetError
from .files import TextFile
from .records import check_id

Judgement = tuple[str, str, int, int]  # query id, doc id, relevance, line number

_HEADER_NAMES = {
    "query-id": 0,
    "query_id": 0,
    "qid": 0,
    "query": 0,
    "corpus-id": 1,
    "corpus_id": 1,
    "docid": 1,
    "doc-id": 1,
    "doc_id": 1,
    "pid": 1,
    "doc": 1,
    "score": 2,
    "relevance": 2,
    "rel": 2,
    "label": 2,
}
_HEADER_HINT = "'query-id\\tcorpus-id\\tscore'"


def parse_relevance(path: object, line: int | None, raw: object) -> int:
    """An integer relevance grade from a qrels cell (str) or column value (int/float)."""
    if isinstance(raw, bool):
        value = float("nan")
    elif isinstance(raw, int):
        return raw
    elif isinstance(raw, float):
        value = raw
    else:
        try:
            value = float(str(raw).strip())
        except ValueError:
            value = float("nan")
    if not math.isfinite(value) or value != int(value):
        raise DatasetError(path, f"relevance {raw!r} is not an integer; write graded relevance as 0, 1, 2, ...", line)
    return int(value)


def read_qrels(source: TextFile) -> list[Judgement]:
    """Read a qrels file, recognising BEIR TSV (with header) or TREC (4 columns) by its shape."""
    path = source.path
    out: list[Judgement] = []
    seen: dict[tuple[str, str], int] = {}
    fmt: str | None = None
    sep: str | None = "\t"
    order = (0, 1, 2)
    for ln, raw in source.lines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if fmt is None:
            fmt, sep, order = _shape(source, ln, line)
            if fmt == "beir-header":
                fmt = "beir"
                continue
        if fmt == "beir":
            cols = line.split(sep)
            if len(cols) != 3:
                how = {"\t": "tab-separated ", ",": "comma-separated "}.get(sep or "", "")
                raise DatasetError(
                    path, f"expected 3 {how}columns (query-id, corpus-id, score) like the header, got {len(cols)}", ln
                )
            qraw, draw, rel = (cols[i] for i in order)
        else:
            cols = line.split()
            if len(cols) != 4:
                raise DatasetError(
                    path, f"expected TREC qrels 'qid iteration docid relevance' (4 columns), got {len(cols)}", ln
                )
            qraw, _, draw, rel = cols
        qid = check_id(path, ln, qraw, "query id")
        did = check_id(path, ln, draw, "document id")
        key = (qid, did)
        if key in seen:
            raise DatasetError(
                path, f"duplicate judgement for query {qid!r}, document {did!r} (first on line {seen[key]})", ln
            )
        seen[key] = ln
        out.append((qid, did, parse_relevance(path, ln, rel), ln))
    return out


def _shape(source: TextFile, ln: int, line: str) -> tuple[str, str | None, tuple[int, int, int]]:
    """The format told by the first non-blank line: a BEIR header (tab-, comma- or space-separated; its column
    names say which column is which) or TREC; the order gives the query, document and score column indices."""
    for sep in ("\t", ",", None):
        cols = [c.strip().lower() for c in line.split(sep)]
        roles = [_HEADER_NAMES.get(c) for c in cols]
        if len(cols) == 3 and sorted(r for r in roles if r is not None) == [0, 1, 2]:
            order = tuple(roles.index(r) for r in (0, 1, 2))
            return "beir-header", sep, (order[0], order[1], order[2])
    cols = line.split("\t") if "\t" in line else line.split()
    if len(cols) == 3:
        try:
            float(cols[2])
        except ValueError:
            raise DatasetError(
                source.path,
                f"header row {cols} is not recognised; name the columns {_HEADER_HINT} (or qid/docid/score)",
                ln,
            ) from None
        raise DatasetError(
            source.path,
            f"3-column qrels need a header row {_HEADER_HINT} (TREC qrels have 4 "
            "columns: qid iteration docid relevance)",
            ln,
        )
    return "trec", None, (0, 1, 2)
