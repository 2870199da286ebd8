"""An honest ingest pipeline over the bundled dataset, and copies of it with one injected fault each.

The chunks are encoded once with the reference under the audited contract (the bundled all-MiniLM-L6-v2,
document prefix ``passage: ``), in corpus order, in batches of 32 as an ingest job would, and written to FAISS
files with a one-id-per-line sidecar. Each fault is one real ingest bug applied to that pipeline's output.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

DOC_PREFIX = "passage: "
BATCH = 32
RUN_ARGS = ["--doc-prefix", DOC_PREFIX]  # the audited contract: the bundled model, documents prefixed


CHUNKS = 160  # the first chunks of the bundled corpus: five ingest batches of 32


# the statuses of an audit whose every check passes (no manifest given: that check is skipped)
ALL_PASS = {
    "shape": "PASS",
    "ids": "PASS",
    "norms": "PASS",
    "collisions": "PASS",
    "fidelity": "PASS",
    "retrieval": "PASS",
    "ann_recall": "PASS",
    "manifest": "SKIP",
}


def audit_argv(dataset: Path, index: str, out: Path, *extra: str) -> list[str]:
    """``evalsuite audit`` of ``index`` (a store URI) against the ingest's contract and dataset."""
    return ["audit", "--index", index, "--dataset", str(dataset), *RUN_ARGS, "--out", str(out), *extra]


def written(out: Path) -> list[Path]:
    """Every file under ``out`` (an input error must leave none)."""
    return [p for p in out.rglob("*") if p.is_file()] if out.exists() else []


@dataclass(frozen=True)
class Ingest:
    dataset: Path  # the bundled dataset cut to CHUNKS chunks and the queries judged on them
    ids: list[str]
    texts: list[str]
    vectors: np.ndarray  # the honest vectors, corpus order
    root: Path

    def variant(self, settings: dict[str, object], rows: list[int]) -> np.ndarray:
        """These rows' chunks encoded under another contract (a stale copy: another pooling, no prefix)."""
        return _encode(settings, [self.texts[r] for r in rows])

    def write(
        self,
        name: str,
        vectors: np.ndarray,
        ids: list[str] | None = None,
        *,
        index: Callable[[int], object] | None = None,
    ) -> tuple[Path, Path]:
        """A FAISS file (a flat inner-product index unless ``index`` makes another) and its id sidecar."""
        import faiss

        d = self.root / name
        d.mkdir(parents=True, exist_ok=True)
        idx: object = index(vectors.shape[1]) if index is not None else faiss.IndexFlatIP(vectors.shape[1])
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        if not idx.is_trained:  # type: ignore[attr-defined]
            idx.train(x)  # type: ignore[attr-defined]
        idx.add(x)  # type: ignore[attr-defined]
        faiss.write_index(idx, str(d / "index.faiss"))
        (d / "ids.txt").write_text("\n".join(ids if ids is not None else self.ids) + "\n", encoding="utf-8")
        return d / "index.faiss", d / "ids.txt"


def _encode(settings: dict[str, object], texts: list[str]) -> np.ndarray:
    """The reference's document vectors under ``settings``, in ingest batches (the embedding cache keeps them,
    so the audit's reference finds exactly these vectors)."""
    from evalsuite.encode.contract_encoder import ContractEncoder
    from evalsuite.run.pipeline import make_encoder, prepare
    from evalsuite.run.spec import RunSpec

    prepared = prepare(RunSpec.from_mapping(settings, source="test"))
    enc = ContractEncoder(make_encoder(prepared), prepared.contract)
    return np.vstack([enc.embed_documents(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)])


def _read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="session")
def ingest(tmp_path_factory: pytest.TempPathFactory, minibeir_dir: Path, make_beir: Callable[..., Path]) -> Ingest:
    root = tmp_path_factory.mktemp("audit")
    corpus = _read(minibeir_dir / "corpus.jsonl")[:CHUNKS]
    ids = [str(r["_id"]) for r in corpus]
    keep = set(ids)
    lines = (minibeir_dir / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    qrels = [(q, d, int(r)) for q, d, r in (line.split("\t") for line in lines if line.strip()) if d in keep]
    judged = {q for q, _, _ in qrels}
    queries = [q for q in _read(minibeir_dir / "queries.jsonl") if q["_id"] in judged]
    dataset = make_beir(root / "dataset", corpus, queries, qrels)
    from evalsuite.datasets import load_dataset

    ds = load_dataset(dataset, "test")
    texts = [ds.corpus[i] for i in ids]
    return Ingest(dataset, ids, texts, _encode({"doc_prefix": DOC_PREFIX, "dataset": str(dataset)}, texts), root)
