"""The index kind registry: one declaration per kind is what parsing, building, searching and the memory model
read, so a kind added to ``INDEX_KINDS`` is parsed, built and measured with nothing else changed."""

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.retrieval.index import INDEX_KIND_NAMES
from evalsuite.retrieval.index.build import build, serialized_bytes
from evalsuite.retrieval.index.footprint import footprint
from evalsuite.retrieval.index.kinds import INDEX_KINDS, IndexKind, index_kind
from evalsuite.retrieval.index.spec import parse_index, resolve

N, D = 800, 32


@pytest.fixture(scope="module")
def docs():
    x = np.random.default_rng(3).standard_normal((N, D))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_the_kinds_are_the_declarations_in_order():
    assert INDEX_KIND_NAMES == tuple(k.name for k in INDEX_KINDS) == ("flat", "hnsw", "ivf", "ivfpq", "sq8", "binary")
    assert [k.name for k in INDEX_KINDS if k.exact] == ["flat"]
    with pytest.raises(SpecError, match="unknown index kind 'pq'; choose one of flat, hnsw"):
        index_kind("pq")


@pytest.mark.parametrize("kind", INDEX_KINDS, ids=lambda k: k.name)
def test_every_declared_kind_parses_builds_searches_and_sizes_itself(kind: IndexKind, docs):
    """Bugs caught: a kind's declaration not consulted (a name-branch left behind), its defaults not the
    canonical text's, its footprint off FAISS's serialized size, its scores not best first."""
    spec = parse_index(kind.name)
    assert [name for name, _ in spec.params] == list(kind.defaults) and spec.exact == kind.exact
    assert parse_index(spec.text) == spec
    resolved, _ = resolve(spec, N, D)
    built = build(resolved, docs, "cosine", use_gpu=False)
    scores, ids = built.search(docs[:5], 10)
    assert ids.shape == (5, 10) and (ids >= 0).all()
    assert (np.diff(scores, axis=1) <= 1e-6).all()  # higher is better, best first
    assert footprint(resolved, D) == kind.footprint(resolved, D)
    assert serialized_bytes(built) == pytest.approx(footprint(resolved, D).total(N), rel=0.05)
