"""The run's ranking from the contract's retriever (:mod:`evalsuite.retrieval.retrievers`).

``dense`` is the ranking :func:`evalsuite.run.pipeline.score` searched from the contract's vectors; any other
retriever is run here over the dataset's texts (and, for a hybrid fusing ``dense``, that same dense ranking at
the fusion depth). What a run records of it is :func:`manifest_entry` (``manifest.json``'s ``retrieval``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base.errors import SpecError
from ..contract import Contract
from ..datasets import Dataset
from ..retrieval.retrievers import DENSE, RetrievalSpec, Retrieved, parse_retrieval, retriever
from ..retrieval.search import Ranking

if TYPE_CHECKING:
    from ..encode.sparse_cache import SparseVectorCache
    from .prepared import Prepared
    from .spec import RunSpec

CORPUS_CHUNK = 65_536


def needs_vectors(contract: Contract) -> bool:
    """Whether the contract's retriever reads its dense vectors (``dense``, a hybrid fusing it)."""
    spec = parse_retrieval(contract.retrieval)
    return retriever(spec.kind).needs_vectors(spec)


@dataclass(frozen=True)
class DatasetInputs:
    """A dataset's texts as a retriever reads them, the dense ranking at any depth (``dense``: None when the run
    has no vectors) and the learned sparse ranking (``sparse_search``: None when no model can make one)."""

    dataset: Dataset
    dense_search: Callable[[int], Ranking] | None
    sparse_search: Callable[[int, int], Retrieved] | None = None
    multivector_search: Callable[[str, str, int, int], Retrieved] | None = None

    @property
    def query_ids(self) -> Sequence[str]:
        return self.dataset.query_ids

    @property
    def doc_ids(self) -> Sequence[str]:
        return self.dataset.doc_ids

    @property
    def corpus_key(self) -> str:
        ident = self.dataset.identity
        return f"{ident.sha256}:{ident.n_documents}"

    def query_texts(self) -> list[str]:
        return [self.dataset.queries[q] for q in self.dataset.query_ids]

    def doc_texts(self) -> Iterator[str]:
        for _, texts in self.dataset.corpus_chunks(CORPUS_CHUNK):  # a corpus on disk is read a chunk at a time
            yield from texts

    def dense(self, k: int) -> Ranking:
        if self.dense_search is None:
            raise SpecError("this run has no dense vectors to search: fuse retrievers that read the texts only")
        return self.dense_search(k)

    def sparse(self, top_k: int, k: int) -> Retrieved:
        if self.sparse_search is None:
            raise SpecError("this run has no model to make sparse vectors with")
        return self.sparse_search(top_k, k)

    def multivector(self, projection: str, specials: str, rerank: int, k: int) -> Retrieved:
        if self.multivector_search is None:
            raise SpecError("this run has no model to make token vectors with")
        return self.multivector_search(projection, specials, rerank, k)


def sparse_ranking(prepared: Prepared, contract: Contract) -> Callable[[int, int], Retrieved]:
    """The model's learned sparse run (:mod:`evalsuite.encode.sparse`): queries and documents rendered for their
    role, encoded once per ``top_k``, searched exactly (:mod:`evalsuite.retrieval.sparse_search`)."""
    from ..encode.sparse import SparseEncoder
    from ..retrieval.sparse_search import sparse_search

    spec, ds = prepared.spec, prepared.dataset
    encoder = SparseEncoder.of(
        prepared.model,
        max_length=contract.max_length,
        device=spec.device,
        batch_size=spec.batch_size,
        trust_remote_code=spec.trust_remote_code,
    )
    done: dict[int, tuple[list[Any], list[Any]]] = {}
    cache = sparse_cache(spec)

    def encode(texts: list[str], top_k: int) -> list[Any]:
        if cache is None:
            return encoder.encode(texts, top_k)
        return cache.get(encoder.cache_key(texts, top_k), lambda: encoder.encode(texts, top_k))

    def search(top_k: int, k: int) -> Retrieved:
        if top_k not in done:
            inputs = DatasetInputs(ds, None)
            queries = encode(contract.render_all("query", inputs.query_texts()), top_k)
            docs = encode(contract.render_all("document", list(inputs.doc_texts())), top_k)
            done[top_k] = (queries, docs)
        queries, docs = done[top_k]
        ranking = sparse_search(
            queries, docs, query_ids=ds.query_ids, doc_ids=ds.doc_ids, vocab_size=encoder.head.vocab_size, k=k
        )
        active = sum(len(ids) for ids, _ in docs)
        entry: dict[
            str, object
        ] = {  # an inverted index stores one (int32 token id, float32 weight) posting per active weight
            "active_per_document": round(active / max(1, len(docs)), 2),
            "index_bytes_per_document": round(8 * active / max(1, len(docs)), 2),
        }
        if cache is not None:  # both roles' vectors read back or computed (and stored) by this run
            entry["vector_cache"] = {"hits": cache.hits, "misses": cache.misses, "corrupt": cache.corrupt}
        return Retrieved(ranking, entry={"sparse": entry})

    return search


def sparse_cache(spec: RunSpec) -> SparseVectorCache | None:
    """The sparse vector cache beside the embedding cache (``--cache-dir``, ``$EVALSUITE_CACHE_DIR`` or the user
    cache); None under ``--no-cache``."""
    from ..encode.cache import cache_root
    from ..encode.sparse_cache import SparseVectorCache

    return SparseVectorCache(cache_root(spec.cache_dir)) if spec.use_cache else None


def multivector_ranking(
    prepared: Prepared, contract: Contract, dense: Callable[[int], Ranking] | None
) -> Callable[[str, str, int, int], Retrieved]:
    """The model's MaxSim run (:mod:`evalsuite.retrieval.maxsim`) over per-token vectors
    (:class:`evalsuite.encode.tokens.TokenEncoder`: the last hidden states, or their ``colbert_linear.pt``
    projection, L2-normalised per token) of the texts rendered for their role, at the contract's max length and
    dtype. ``rerank`` 0 encodes every document and ranks the whole corpus; N encodes only the dense run's top N
    of each query and re-ranks them. Each text is encoded once per (projection, specials)."""
    from ..encode.tokens import TokenEncoder, build_late_contract
    from ..retrieval.maxsim import maxsim_rerank, maxsim_search

    spec, ds = prepared.spec, prepared.dataset
    encoders: dict[tuple[str, str], TokenEncoder] = {}
    tokens: dict[tuple[str, str, str], dict[str, Any]] = {}  # (projection, specials, role) -> id -> matrix

    def encoded(projection: str, specials: str, role: str, ids: Sequence[str]) -> dict[str, Any]:
        if (projection, specials) not in encoders:
            has_linear = (prepared.model.root / "colbert_linear.pt").is_file()
            late = build_late_contract(
                prepared.model,
                projection="colbert_linear.pt" if projection == "auto" and has_linear else None,
                special_tokens=specials,
                max_length=contract.max_length,
                dtype=contract.dtype,
                query_prefix="",  # the texts come rendered by the contract (its prefixes)
                doc_prefix="",
            )
            encoders[projection, specials] = TokenEncoder(
                prepared.model, late, device=spec.device, batch_size=spec.batch_size
            )
        done = tokens.setdefault((projection, specials, role), {})
        todo = [i for i in dict.fromkeys(ids) if i not in done]
        if todo:
            texts = [ds.queries[i] for i in todo] if role == "query" else [ds.corpus[i] for i in todo]
            matrices = encoders[projection, specials].encode(contract.render_all(role, texts), role=role)
            done.update(zip(todo, matrices, strict=True))
        return done

    def search(projection: str, specials: str, rerank: int, k: int) -> Retrieved:
        queries = encoded(projection, specials, "query", ds.query_ids)
        if rerank == 0:
            docs = encoded(projection, specials, "document", ds.doc_ids)
            ranking = maxsim_search(
                [queries[q] for q in ds.query_ids],
                [docs[d] for d in ds.doc_ids],
                query_ids=ds.query_ids,
                doc_ids=ds.doc_ids,
                k=k,
            )
        else:
            if dense is None:
                raise SpecError("multivector re-ranking needs the dense run: this run has no dense vectors")
            first = dense(max(rerank, k))
            docs = encoded(projection, specials, "document", [d for q in first for d in first.top(q, rerank)])
            ranking = maxsim_rerank(first, queries, docs, depth=rerank, k=k)
        tokens = sum(len(m) for m in docs.values()) / max(1, len(docs))  # over the documents encoded
        dim = encoders[projection, specials].contract.dim
        entry = {"tokens_per_document": round(tokens, 2), "index_bytes_per_document": round(4 * dim * tokens, 2)}
        return Retrieved(ranking, entry={"multivector": entry})

    return search


def dense_at(searched: Ranking, k: int, search: Callable[[int], Ranking] | None) -> Callable[[int], Ranking]:
    """The dense ranking at any depth: ``searched`` (depth ``k``) cut when that is enough (the top ``d`` of an
    exact top ``k`` is the exact top ``d``), else ``search`` again at the depth asked for."""

    def at(depth: int) -> Ranking:
        if depth <= k:
            return Ranking(
                {q: d[:depth] for q, d in searched.doc_ids.items()},
                {q: s[:depth] for q, s in searched.scores.items()},
                depth=min(depth, searched.depth) if searched.depth is not None else None,
                corpus_size=searched.corpus_size,
            )
        if search is None:
            raise SpecError(
                f"the fusion depth {depth} is deeper than the run's search ({k} documents) and its index cannot be "
                "searched again here: lower --fusion-depth, or use the exact flat index"
            )
        return search(depth)

    return at


def retrieve(prepared: Prepared, contract: Contract, k: int, dense: Callable[[int], Ranking] | None) -> Retrieved:
    """The contract's retriever's top ``k`` per query (not called for ``dense``, whose ranking the caller has)."""
    spec = parse_retrieval(contract.retrieval)
    sparse = sparse_ranking(prepared, contract) if "sparse" in spec.components else None
    late = multivector_ranking(prepared, contract, dense) if "multivector" in spec.components else None
    return retriever(spec.kind).retrieve(spec, DatasetInputs(prepared.dataset, dense, sparse, late), k)


def manifest_entry(contract: Contract, retrieved: Retrieved | None, seconds: float | None = None) -> dict[str, object]:
    """``manifest.json``'s ``retrieval``: the retriever and its settings, how each part was made, and for a
    hybrid each component's run depth (its metrics are in ``results.json``'s ``retrieval``)."""
    spec: RetrievalSpec = parse_retrieval(contract.retrieval)
    out = spec.to_dict()
    if retrieved is not None:
        out.update({name: dict(v) for name, v in retrieved.entry.items()})  # type: ignore[call-overload]
    if seconds is not None:
        out["seconds"] = round(seconds, 4)
    return out


def components_entry(
    qrels: Any, retrieved: Retrieved, per_query: dict[str, dict[str, float]], metrics: Sequence[str]
) -> dict[str, object]:
    """A hybrid's component runs scored with the run's metrics (each at the fusion depth) and, per metric, the
    fusion's gain over its best component with a paired bootstrap 95% CI over the queries (as a reranker's gain
    over its first stage is reported)."""
    from ..scoring.metrics import evaluate
    from ..scoring.stats import compare, paired_scores

    scored = {name: evaluate(qrels, ranking, metrics) for name, ranking in retrieved.components.items()}
    gain: dict[str, object] = {}
    for m in metrics:
        best = max(scored, key=lambda n: scored[n][0][m])
        _, fused, component = paired_scores(per_query, scored[best][1], [m])
        (comparison,) = compare(fused, component)
        gain[m] = {"over": best, **comparison.to_dict()}
    return {
        "components": {name: {k: round(v, 6) for k, v in agg.items()} for name, (agg, _) in scored.items()},
        "gain": gain,
    }


def retrieval_record(
    contract: Contract,
    retrieved: Retrieved | None,
    cached: Mapping[str, Any] | None,
    qrels: Any,
    per_query: dict[str, dict[str, float]],
    metrics: Sequence[str],
) -> dict[str, object] | None:
    """What the run records of a retriever other than ``dense`` (None for ``dense``): the record read back with a
    cached ranking (``cached``), else :func:`manifest_entry` with, for a hybrid, :func:`components_entry`."""
    if contract.retrieval == DENSE:
        return None
    if cached is not None:
        return dict(cached)  # how the cached ranking was made, a hybrid's components and gain
    record = manifest_entry(contract, retrieved)
    if retrieved is not None and retrieved.components:  # each component's metrics, the fusion's gain (CI)
        record.update(components_entry(qrels, retrieved, per_query, metrics))
    return record


__all__ = [
    "DENSE",
    "DatasetInputs",
    "components_entry",
    "dense_at",
    "manifest_entry",
    "needs_vectors",
    "retrieval_record",
    "retrieve",
]
