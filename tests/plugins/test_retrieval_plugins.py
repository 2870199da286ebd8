"""Index kinds and retrievers from an installed distribution (entry point groups ``evalsuite.index_kinds`` and
``evalsuite.retrievers``): a run searches with the plug-in's index kind and ranks with its retriever, each against an
independent computation; a plug-in taking a built-in's name is a PluginError naming its entry point; without the
distribution its names are unknown."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evalsuite.base import plugins
from evalsuite.base.errors import PluginError, SpecError
from evalsuite.run.pipeline import run
from evalsuite.run.spec import RunSpec
from evalsuite.scoring.metrics import evaluate

from .conftest import install

METRICS = ("ndcg@10", "recall@10")

PLUGIN = """
from dataclasses import dataclass

from evalsuite.retrieval.index.kinds import FLOAT32, Footprint, IndexKind
from evalsuite.retrieval.retrievers import RetrieverKind
from evalsuite.retrieval.retrievers.value import Retrieved
from evalsuite.retrieval.search import Ranking


@dataclass(frozen=True)
class Copy(IndexKind):
    def make(self, spec, d, metric):
        import faiss

        return faiss.IndexFlat(d, metric)

    def footprint(self, spec, d):
        return Footprint(FLOAT32 * d, 0, self.rescore_bytes(spec, d))


@dataclass(frozen=True)
class Overlap(RetrieverKind):
    def retrieve(self, spec, inputs, k):
        ids, docs = list(inputs.doc_ids), [set(t.lower().split()) for t in inputs.doc_texts()]
        doc_ids, scores = {}, {}
        for qid, text in zip(inputs.query_ids, inputs.query_texts()):
            words = set(text.lower().split())
            shared = [len(words & d) for d in docs]
            top = sorted(range(len(ids)), key=lambda j: (shared[j], ids[j]), reverse=True)[:k]  # ties: id descending
            doc_ids[qid] = tuple(ids[j] for j in top)
            scores[qid] = tuple(float(shared[j]) for j in top)
        return Retrieved(Ranking(doc_ids, scores))


COPY = Copy("flatcopy", "a float32 copy searched exactly", {"probe": 3})
OVERLAP = Overlap("overlap", "the words a query and a document share")
HNSW = Copy("hnsw", "takes a built-in's name")
BM25 = Overlap("bm25", "takes a built-in's name")
"""


@pytest.fixture
def plugged(tmp_path: Path, on_path) -> Path:  # type: ignore[no-untyped-def]
    site = install(
        tmp_path / "site",
        "evalsuite-retrieval-plugin",
        "[evalsuite.index_kinds]\ncopy = retrieval_plugin:COPY\n\n[evalsuite.retrievers]\noverlap = retrieval_plugin:OVERLAP\n",
        {"retrieval_plugin.py": PLUGIN},
    )
    on_path(site)
    yield site
    sys.modules.pop("retrieval_plugin", None)


def spec(tiny_model_dir: Path, small_beir: Path, **settings: object) -> RunSpec:
    return RunSpec(
        model=str(tiny_model_dir), dataset=str(small_beir), device="cpu", use_cache=False, metrics=METRICS, **settings
    )


def test_a_plugin_index_kind_is_parsed_built_and_measured(plugged, tiny_model_dir, small_beir) -> None:  # type: ignore[no-untyped-def]
    from evalsuite.retrieval.index.kinds import index_kinds
    from evalsuite.retrieval.index.spec import parse_index

    assert [k.name for k in index_kinds()][-1] == "flatcopy"
    assert parse_index("flatcopy").text == "flatcopy:probe=3" and parse_index("FlatCopy:probe=5").text == (
        "flatcopy:probe=5"
    )
    with pytest.raises(SpecError, match=r"probe=0 is out of range \(>= 1\)"):
        parse_index("flatcopy:probe=0")
    exact = run(spec(tiny_model_dir, small_beir))
    copied = run(spec(tiny_model_dir, small_beir, index="flatcopy:probe=2"))
    assert copied.contract.index == "flatcopy:probe=2" and copied.manifest["index"]["spec"] == "flatcopy:probe=2"
    assert copied.ranking.doc_ids == exact.ranking.doc_ids  # an exact copy: the flat ranking, document for document
    assert copied.metrics == exact.metrics
    measured = copied.manifest["index"]
    assert measured["effective"] == "flatcopy:probe=2" and measured["bytes_per_vector"] == 4 * copied.contract.dim


def test_a_plugin_retriever_ranks_a_run(plugged, tiny_model_dir, small_beir) -> None:  # type: ignore[no-untyped-def]
    result = run(spec(tiny_model_dir, small_beir, retrieval="overlap"))
    ds = result.dataset
    docs = {d: set(ds.corpus[d].lower().split()) for d in ds.doc_ids}
    for qid in ds.query_ids:  # the overlap ranking computed here, independently of the plug-in
        words = set(ds.queries[qid].lower().split())
        expected = sorted(ds.doc_ids, key=lambda d: (len(words & docs[d]), d), reverse=True)[:10]
        assert list(result.ranking.doc_ids[qid]) == expected
    assert result.metrics == evaluate(ds.qrels, result.ranking, METRICS)[0]
    assert result.manifest["retrieval"] == {"kind": "overlap", "text": "overlap"}
    assert result.query_vectors is None  # it reads no vectors: nothing was encoded


@pytest.mark.parametrize(
    ("group", "target", "taken"),
    [("evalsuite.index_kinds", "HNSW", "hnsw"), ("evalsuite.retrievers", "BM25", "bm25")],
)
def test_a_plugin_taking_a_built_in_name_is_refused_by_its_entry_point(tmp_path, on_path, group, target, taken) -> None:  # type: ignore[no-untyped-def]
    on_path(install(tmp_path, "evalsuite-taken", f"[{group}]\ntaken = retrieval_plugin:{target}\n",
                    {"retrieval_plugin.py": PLUGIN}))  # fmt: skip
    from evalsuite.retrieval.index.spec import parse_index
    from evalsuite.retrieval.retrievers.spec import parse_retrieval

    named = rf"entry point taken = retrieval_plugin:{target} \(group {group}, from evalsuite-taken 0.1\)"
    read = parse_index if group == "evalsuite.index_kinds" else parse_retrieval
    with pytest.raises(PluginError, match=f"{named} declares '{taken}', a name a built-in already has"):
        read("flat" if read is parse_index else "dense")
    sys.modules.pop("retrieval_plugin", None)


def test_without_the_plugin_its_index_kind_and_retriever_are_unknown() -> None:
    plugins.forget()
    from evalsuite.retrieval.index.spec import parse_index
    from evalsuite.retrieval.retrievers.spec import parse_retrieval

    with pytest.raises(SpecError, match="unknown index kind 'flatcopy'"):
        parse_index("flatcopy")
    with pytest.raises(SpecError, match="'overlap' is not a retriever"):
        parse_retrieval("overlap")
