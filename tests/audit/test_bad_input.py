"""Bad input is a typed error naming the file and what to do, exit 2, and nothing is written under --out."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalsuite.cli import main

from .conftest import Ingest, audit_argv, written


def run(ingest: Ingest, out: Path, index: str, *extra: str) -> int:
    return main(audit_argv(ingest.dataset, index, out, *extra))


def test_a_truncated_faiss_file(ingest: Ingest, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index, ids = ingest.write("good", ingest.vectors)
    cut = tmp_path / "cut.faiss"
    cut.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    assert run(ingest, tmp_path / "out", f"faiss:{cut}", "--ids", str(ids)) == 2
    err = capsys.readouterr().err
    assert f"faiss:{cut}" in err and "truncated, corrupt or not a FAISS index" in err
    assert written(tmp_path / "out") == []


def test_a_file_that_is_not_faiss(ingest: Ingest, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.faiss"
    junk.write_bytes(b"not an index at all" * 10)
    assert run(ingest, tmp_path / "out", f"faiss:{junk}") == 2
    assert "FAISS cannot read this file" in capsys.readouterr().err
    assert written(tmp_path / "out") == []


@pytest.mark.parametrize(("delta", "word"), [(-1, "fewer"), (3, "more")])
def test_a_sidecar_with_fewer_or_more_ids(
    ingest: Ingest, tmp_path: Path, capsys: pytest.CaptureFixture[str], delta: int, word: str
) -> None:
    index, _ = ingest.write("good", ingest.vectors)
    n = len(ingest.ids)
    side = tmp_path / "ids.txt"
    side.write_text("\n".join(([*ingest.ids, "x1", "x2", "x3"])[: n + delta]) + "\n")
    assert run(ingest, tmp_path / "out", f"faiss:{index}", "--ids", str(side)) == 2
    err = capsys.readouterr().err
    assert f"--ids {side}: {n + delta} ids for {n} vectors" in err and f"({word} ids than vectors)" in err
    assert written(tmp_path / "out") == []


def test_an_empty_index(ingest: Ingest, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import faiss

    empty = tmp_path / "empty.faiss"
    faiss.write_index(faiss.IndexFlatIP(384), str(empty))
    assert run(ingest, tmp_path / "out", f"faiss:{empty}") == 2
    assert "the index holds no vectors" in capsys.readouterr().err
    assert written(tmp_path / "out") == []


def test_int_faiss_ids_without_a_sidecar_are_an_id_type_mismatch(
    ingest: Ingest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import faiss

    idx = faiss.IndexIDMap(faiss.IndexFlatIP(384))
    idx.add_with_ids(ingest.vectors, np.arange(1000, 1000 + len(ingest.ids)))
    path = tmp_path / "idmap.faiss"
    faiss.write_index(idx, str(path))
    assert run(ingest, tmp_path / "out", f"faiss:{path}") == 2
    err = capsys.readouterr().err
    assert "every stored id is an integer (1000, 1001, 1002" in err and "give --ids" in err
    assert written(tmp_path / "out") == []


def test_a_jsonl_sidecar_with_a_text_faiss_id(
    ingest: Ingest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index, _ = ingest.write("good", ingest.vectors)
    side = tmp_path / "ids.jsonl"
    side.write_text("".join(json.dumps({"faiss_id": str(i), "chunk_id": c}) + "\n" for i, c in enumerate(ingest.ids)))
    assert run(ingest, tmp_path / "out", f"faiss:{index}", "--ids", str(side)) == 2
    assert "faiss_id '0' is not an integer" in capsys.readouterr().err


def test_an_unknown_scheme_lists_the_known_ones(
    ingest: Ingest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(ingest, tmp_path / "out", "chroma://x") == 2
    assert "it must start with one of: faiss:" in capsys.readouterr().err
