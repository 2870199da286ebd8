"""The FAISS store against numpy: every index type read (memory-mapped), its vectors, ids, fetch and both searches."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from evalsuite.audit.source import SourceOptions
from evalsuite.audit.stores import STORE_KINDS, open_source
from evalsuite.errors import IndexSourceError, SpecError

D, N = 16, 600


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    x = np.random.default_rng(0).standard_normal((N, D)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _kinds() -> dict[str, Callable[[], object]]:
    import faiss

    return {
        "flat": lambda: faiss.IndexFlatIP(D),
        "flat_l2": lambda: faiss.IndexFlatL2(D),
        "ivf": lambda: faiss.IndexIVFFlat(faiss.IndexFlatIP(D), D, 8, faiss.METRIC_INNER_PRODUCT),
        "hnsw": lambda: faiss.IndexHNSWFlat(D, 8, faiss.METRIC_INNER_PRODUCT),
        "sq8": lambda: faiss.IndexScalarQuantizer(D, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT),
        "pq": lambda: faiss.IndexPQ(D, 4, 4, faiss.METRIC_INNER_PRODUCT),
    }


def _write(path: Path, index: object, x: np.ndarray, ids: np.ndarray | None = None) -> Path:
    import faiss

    if not index.is_trained:  # type: ignore[attr-defined]
        index.train(x)  # type: ignore[attr-defined]
    if ids is None:
        index.add(x)  # type: ignore[attr-defined]
    else:
        index.add_with_ids(x, ids)  # type: ignore[attr-defined]
    faiss.write_index(index, str(path))
    return path


def _brute(x: np.ndarray, q: np.ndarray, k: int, l2: bool) -> np.ndarray:
    s = -((q[:, None, :] - x[None, :, :]) ** 2).sum(-1) if l2 else q @ x.T
    return np.argsort(-s, axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("kind", list(_kinds()))
def test_every_index_type_streams_its_vectors_and_searches_exactly(kind: str, data: np.ndarray, tmp_path: Path) -> None:
    path = _write(tmp_path / "i.faiss", _kinds()[kind](), data)
    side = tmp_path / "ids.txt"
    side.write_text("".join(f"c{i}\n" for i in range(N)))
    src = open_source(f"faiss:{path}", SourceOptions(ids_path=side))
    info = src.info()
    assert (info.count, info.dim, info.metric) == (N, D, "l2" if kind == "flat_l2" else "ip")
    assert src.mapped  # type: ignore[attr-defined]  # FAISS 1.15 maps every one of these types
    batches = list(src.iter_vectors(250))
    assert [len(i) for i, _ in batches] == [250, 250, 100]
    got = np.vstack([v for _, v in batches])
    lossy = kind in ("sq8", "pq")
    if not lossy:
        assert np.array_equal(got, data)  # reconstruct_n returns the stored floats exactly
    assert [c for i, _ in batches for c in i] == [f"c{i}" for i in range(N)]
    q = data[:7] + 0.01
    exact = src.search(q, 5, exact=True)
    want = _brute(got, q, 5, kind == "flat_l2")  # the exact search is over the stored (decoded) vectors
    if lossy:  # decoded vectors can tie exactly: compare the scores found
        brute = np.take_along_axis(q @ got.T, want, axis=1)
        assert np.allclose([[s for _, s in row] for row in exact], brute, atol=1e-5)
    else:
        assert [[c for c, _ in row] for row in exact] == [[f"c{j}" for j in row] for row in want]
    assert all(a[1] >= b[1] for row in exact for a, b in itertools.pairwise(row))  # higher is better
    fetched = src.fetch(["c3", "c599", "nope"])
    assert set(fetched) == {"c3", "c599"} and np.allclose(fetched["c3"][0], got[3])
    if kind == "ivf":
        assert info.search_params == {"nlist": 8, "nprobe": 1}
    if kind == "hnsw":
        assert set(info.search_params) == {"M", "efSearch"}


def test_an_idmap_with_a_jsonl_sidecar_maps_int_ids_to_chunk_ids(data: np.ndarray, tmp_path: Path) -> None:
    import faiss

    fids = np.arange(N, dtype=np.int64)[::-1] * 7 + 5  # arbitrary int ids, not row numbers
    path = _write(tmp_path / "m.faiss", faiss.IndexIDMap2(faiss.IndexFlatIP(D)), data, fids)
    side = tmp_path / "ids.jsonl"
    side.write_text("".join(json.dumps({"faiss_id": int(f), "chunk_id": f"doc-{int(f)}"}) + "\n" for f in fids))
    src = open_source(f"faiss:{path}", SourceOptions(ids_path=side))
    ids = [c for i, _ in src.iter_vectors(1000) for c in i]
    assert ids == [f"doc-{int(f)}" for f in fids]
    top = src.search(data[:3], 1, exact=False)
    assert [row[0][0] for row in top] == [f"doc-{int(f)}" for f in fids[:3]]
    assert src.search(data[:3], 4, exact=True) == src.search(data[:3], 4, exact=False)


def test_a_jsonl_sidecar_missing_a_stored_id(data: np.ndarray, tmp_path: Path) -> None:
    import faiss

    path = _write(tmp_path / "m.faiss", faiss.IndexIDMap(faiss.IndexFlatIP(D)), data, np.arange(N, dtype=np.int64))
    side = tmp_path / "ids.jsonl"
    side.write_text("".join(json.dumps({"faiss_id": i, "chunk_id": f"c{i}"}) + "\n" for i in range(N - 2)))
    with pytest.raises(IndexSourceError, match=r"2 FAISS id\(s\) of faiss:.* have no chunk id \(first 598\)"):
        open_source(f"faiss:{path}", SourceOptions(ids_path=side))


def test_a_parquet_sidecar(data: np.ndarray, tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import faiss
    import pyarrow.parquet as pq

    path = _write(tmp_path / "f.faiss", faiss.IndexFlatIP(D), data)
    pq.write_table(
        pa.table({"faiss_id": list(range(N)), "chunk_id": [f"p{i}" for i in range(N)]}), tmp_path / "i.parquet"
    )
    src = open_source(f"faiss:{path}", SourceOptions(ids_path=tmp_path / "i.parquet"))
    assert next(iter(src.iter_vectors(2)))[0] == ["p0", "p1"]


def test_not_memory_mapped_when_asked(data: np.ndarray, tmp_path: Path) -> None:
    import faiss

    path = _write(tmp_path / "f.faiss", faiss.IndexFlatIP(D), data)
    src = open_source(f"faiss:{path}", SourceOptions(mmap=False))
    assert not src.mapped  # type: ignore[attr-defined]
    assert next(iter(src.iter_vectors(1)))[0] == ["0"]  # without a sidecar a chunk id is the FAISS id


def test_the_registry_names_each_store_once_and_rejects_unknown_schemes() -> None:
    schemes = [s for k in STORE_KINDS for s in k.schemes]
    assert len(schemes) == len(set(schemes)) and "faiss:" in schemes
    with pytest.raises(SpecError, match="no store answers this URI"):
        open_source("qdrant://x")
