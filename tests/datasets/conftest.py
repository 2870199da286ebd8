"""Writers of small dataset files with exact bytes (encodings, compression, line endings)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from pathlib import Path

import pytest

COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def tsv(rows: list[tuple[str, str, object]], header: str = "query-id\tcorpus-id\tscore") -> bytes:
    return (header + "\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in rows)).encode()


def write(path: Path, data: bytes, suffix: str = "") -> Path:
    """Write ``data`` to ``path`` (+ ``suffix``, compressed accordingly)."""
    target = path.with_name(path.name + suffix)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(COMPRESS[suffix](data) if suffix else data)
    return target


CORPUS = [
    {"_id": "d1", "title": "Wings", "text": "lift on a wing in subsonic flow"},
    {"_id": "d2", "title": "", "text": "boundary layer transition on a flat plate"},
    {"_id": "d3", "title": "Heat", "text": "heat transfer at hypersonic speed"},
]
QUERIES = [
    {"_id": "q1", "text": "wing lift"},
    {"_id": "q2", "text": "boundary layer"},
    {"_id": "q3", "text": "hypersonic heating"},
]
QRELS = [("q1", "d1", 2), ("q2", "d2", 1), ("q3", "d3", 1)]


def dataset(
    root: Path,
    corpus: bytes | None = None,
    queries: bytes | None = None,
    qrels: bytes | None = None,
    *,
    corpus_suffix: str = "",
    queries_suffix: str = "",
    qrels_suffix: str = "",
) -> Path:
    """A three-document BEIR directory; any file may be replaced by exact bytes or compressed."""
    write(root / "corpus.jsonl", jsonl(CORPUS) if corpus is None else corpus, corpus_suffix)
    write(root / "queries.jsonl", jsonl(QUERIES) if queries is None else queries, queries_suffix)
    write(root / "qrels" / "test.tsv", tsv(QRELS) if qrels is None else qrels, qrels_suffix)
    return root


class Writers:
    """The writers above, handed to tests as the ``files`` fixture (tests are not importable modules)."""

    jsonl = staticmethod(jsonl)
    tsv = staticmethod(tsv)
    write = staticmethod(write)
    dataset = staticmethod(dataset)
    CORPUS, QUERIES, QRELS = CORPUS, QUERIES, QRELS


@pytest.fixture(scope="session")
def files() -> type[Writers]:
    return Writers
