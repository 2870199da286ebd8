"""Qrels parsing: BEIR TSV with a header row, or TREC ``qid iteration docid relevance``.

Relevance is an integer; a decimal with a zero fraction (``1.0``, what spreadsheets export) reads
as that integer, anything else (``0.5``, ``high``, ``nan``) is refused. Negative relevance (TREC's
``-2`` for spam) is kept here and read as 0 (judged, not relevant) when the dataset is assembled.
"""

from __future__ import annotations

import math

from ..errors import DatasetError
from .files import TextFile
from .records import check_id

Judgement = tuple[str, str, int, int]  # query id, doc id, relevance, line number

_BEIR_HEADERS = {("query-id", "corpus-id", "score"), ("qid", "docid", "score"), ("query_id", "corpus_id", "score"),
                 ("query-id", "corpus-id", "relevance"), ("qid", "docid", "relevance"), ("qid", "pid", "score")}


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
    for ln, raw in source.lines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if fmt is None:
            fmt, sep = _shape(source, ln, line)
            if fmt == "beir-header":
                fmt = "beir"
                continue
        if fmt == "beir":
            cols = line.split(sep)
            if len(cols) != 3:
                how = {"\t": "tab-separated ", ",": "comma-separated "}.get(sep or "", "")
                raise DatasetError(path, f"expected 3 {how}columns (query-id, corpus-id, score) like the header, got "
                                   f"{len(cols)}", ln)
            qraw, draw, rel = cols
        else:
            cols = line.split()
            if len(cols) != 4:
                raise DatasetError(path, f"expected TREC qrels 'qid iteration docid relevance' (4 columns), got "
                                   f"{len(cols)}", ln)
            qraw, _, draw, rel = cols
        qid = check_id(path, ln, qraw, "query id")
        did = check_id(path, ln, draw, "document id")
        key = (qid, did)
        if key in seen:
            raise DatasetError(path, f"duplicate judgement for query {qid!r}, document {did!r} (first on line "
                               f"{seen[key]})", ln)
        seen[key] = ln
        out.append((qid, did, parse_relevance(path, ln, rel), ln))
    return out


def _shape(source: TextFile, ln: int, line: str) -> tuple[str, str | None]:
    """The format told by the first non-blank line: a BEIR header (tab-, comma- or space-separated) or TREC."""
    for sep in ("\t", ",", None):
        if tuple(c.strip().lower() for c in line.split(sep)) in _BEIR_HEADERS:
            return "beir-header", sep
    if len(line.split()) == 3:
        raise DatasetError(source.path, "3-column qrels need a header row 'query-id\\tcorpus-id\\tscore' (TREC "
                           "qrels have 4 columns: qid iteration docid relevance)", ln)
    return "trec", None
