"""Block search with adversarial ids: ties across blocks between non-ASCII ids and ids that are
prefixes of each other, ranked from the ids' bytes, with only the retrieved ids decoded."""

from __future__ import annotations

import json
import random
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalsuite.cli import main
from evalsuite.datasets.idindex import IdBuilder, IdIndex
from evalsuite.encode.store import VectorStore
from evalsuite.retrieval.search import search
from evalsuite.run.blocksearch import block_search
from evalsuite.run.pipeline import prepare
from evalsuite.run.spec import RunSpec

# ids that are prefixes of each other (d, d1, d10, ...), longer than one 8-byte word with the same first
# word, non-ASCII (2-, 3- and 4-byte UTF-8), upper before lower case; shuffled out of code-point order
IDS = [p + s for p in ("d", "d1", "D", "abcdefgh", "é") for s in ("", "0", "é", "\U0001f600", "a", "\uffff")]
random.Random(1).shuffle(IDS)
FILE_IDS = [i for i in IDS if i.isprintable()]  # what a dataset file may hold (no U+FFFF, no private use)


class CountingIds(IdIndex):
    """An id index that counts the ids decoded one by one and refuses to be listed whole."""

    decoded = 0

    def __getitem__(self, pos: Any) -> Any:
        assert isinstance(pos, int | np.integer), "only single positions may be decoded"
        type(self).decoded += 1
        return super().__getitem__(pos)

    def __iter__(self) -> Any:
        raise AssertionError("the ids were listed whole")

    def ids(self, start: int = 0, stop: int | None = None) -> list[str]:
        raise AssertionError("the ids were listed whole")


def counting(ids: list[str]) -> CountingIds:
    builder = IdBuilder()
    for i in ids:
        builder.add(i)
    built = builder.build()
    return CountingIds(built.blob, built.ends, built.hashes, built.order)


def in_tie_order(ranking: Any) -> None:
    """Independent of search(): scores descending, equal scores by document id descending (code points)."""
    for q in ranking:
        items = list(ranking[q].items())
        for (a, sa), (b, sb) in pairwise(items):
            assert sa > sb or (sa == sb and a > b), (q, a, sa, b, sb)


@pytest.mark.parametrize("block_rows", [1, 2, 3, 5, 7, 100])
def test_ties_across_blocks_with_adversarial_ids(tmp_path: Path, block_rows: int) -> None:
    rng = np.random.default_rng(2)
    base = rng.normal(size=(3, 8)).astype(np.float32)
    n = len(IDS)
    docs = base[np.arange(n) % 3]  # three vectors: every score is shared by ten documents
    queries = rng.normal(size=(4, 8)).astype(np.float32)
    qids = [f"q{i}" for i in range(4)]
    store = VectorStore.create(tmp_path / "v.npy", n, 8)
    store.write(0, docs)
    CountingIds.decoded = 0
    for k in (1, 5, 9, n):
        expected = search(queries, docs, query_ids=qids, doc_ids=IDS, k=k, similarity="dot")
        kw: dict[str, Any] = dict(query_ids=qids, k=k, similarity="dot", dim=8, normalize=False, block_rows=block_rows)
        listed = block_search(queries, store, doc_ids=IDS, **kw)
        before = CountingIds.decoded
        compact = block_search(queries, store, doc_ids=counting(IDS), **kw)
        assert CountingIds.decoded - before == 4 * k  # only the retrieved positions become ids
        for got in (listed, compact):
            assert [list(got[q].items()) for q in qids] == [list(expected[q].items()) for q in qids]
            in_tie_order(got)
    full = block_search(queries, store, doc_ids=IDS, **kw)
    in_tie_order(full)
    # the tie order is spelled out for one group: the eight documents of vector 0, ids descending
    group = [IDS[j] for j in range(0, n, 3)]
    assert [d for d in full["q0"] if d in group] == sorted(group, reverse=True)


def write_beir(root: Path) -> Path:
    """Documents with adversarial ids and only three texts (scores tie), queries that match each text."""
    texts = ["wing lift", "shock wave heating", "boundary layer plate"]
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for i, did in enumerate(FILE_IDS):
            fh.write(json.dumps({"_id": did, "title": "", "text": texts[i % 3]}, ensure_ascii=False) + "\n")
    queries = [{"_id": f"q{i}", "text": t} for i, t in enumerate(texts)]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    qrels = "".join(f"q{i}\t{FILE_IDS[i]}\t1\n" for i in range(3))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels, encoding="utf-8")
    return root


def test_a_streamed_run_with_adversarial_ids_writes_the_in_memory_run_trec(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    data = write_beir(tmp_path / "data")
    streamed_spec = RunSpec(model=str(tiny_model_dir), dataset=str(data), device="cpu", chunk_size=4, block_rows=5)
    assert isinstance(prepare(streamed_spec).dataset.doc_ids, IdIndex)
    outs = {}
    for name, extra in (("memory", []), ("streamed", ["--chunk-size", "4", "--block-rows", "5"])):
        out = tmp_path / name
        argv = ["run", "--model", str(tiny_model_dir), "--dataset", str(data), "--device", "cpu", "--out", str(out)]
        assert main([*argv, "--cache-dir", str(tmp_path / "cache"), *extra]) == 0
        outs[name] = (json.loads((out / "results.json").read_text()), (out / "run.trec").read_text(encoding="utf-8"))
    (memory, memory_trec), (streamed, streamed_trec) = outs["memory"], outs["streamed"]
    assert streamed_trec == memory_trec and memory["metrics"] == streamed["metrics"]
    assert memory["per_query"] == streamed["per_query"]
    # the run holds ties (the documents of q0's text, one score) ranked by id descending; run.trec
    # spells tied scores apart by an ulp each so that trec_eval keeps that order
    group = FILE_IDS[0::3]
    rows = [line.split() for line in memory_trec.splitlines() if line.startswith("q0 ")]
    assert len(group) > 5 and [r[2] for r in rows[: len(group)]] == sorted(group, reverse=True)
