"""One evaluation, start to end: settings -> contract + dataset -> encode -> search -> score.

The CLI and the pytest plugin both call these functions; neither holds logic the other lacks.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..contract import Contract
from ..datasets import Dataset
from ..encode.base import Dimensioned, Encoder, EncodeStats
from ..encode.cache import Caching
from ..encode.chunked import encode_to_store
from ..encode.executors import DEFAULT_BLOCK_ROWS, Execution, build_encoder
from ..encode.ray_pool import executor_scope
from .blocksearch import block_search

if TYPE_CHECKING:
    from ..encode.fleet import FleetConfig
    from ..retrieval.index.measure import IndexRun
from ..base.errors import SpecError
from ..encode.store import VectorStore
from ..retrieval.retrievers import DENSE, Retrieved
from ..retrieval.search import Ranking, search
from ..retrieval.vectors import BlockChecker, IntegrityReport, finalize
from ..scoring.metrics import evaluate as score_metrics
from ..scoring.metrics import search_depth
from .cache.scoring import ScoringCache
from .fingerprint import fingerprint
from .prepared import INDEX_IN_MEMORY, execution_of
from .prepared import Prepared as Prepared  # re-exported: callers import it from here
from .prepared import prepare as prepare  # re-exported: callers import it from here
from .record import (
    add_cached_counts,
    encode_timing,
    encoder_entry,
    executor_since,
    executor_snapshot,
    manifest,
    role_stats_since,
    stats_snapshot,
)
from .result import Result
from .retrieve import components_entry, dense_at, needs_vectors, retrieve
from .retrieve import manifest_entry as retrieval_entry
from .spec import RunSpec


def make_encoder(
    prepared: Prepared, *, dtype: str | None = None, max_length: int | None = None, execution: Execution | None = None
) -> Encoder:
    """The reference encoder for this contract on ``execution``'s executor (in this process by default),
    wrapped by the embedding cache when enabled; the model loads on the first cache miss, never before."""
    spec, c = prepared.spec, prepared.contract
    dtype, max_length = dtype or c.dtype, max_length or c.max_length
    execution = execution or execution_of(spec)

    if spec.endpoints:
        return make_fleet_encoder(prepared, dtype=dtype, max_length=max_length)

    def build() -> Encoder:
        return build_encoder(
            prepared.model,
            execution,
            dtype=dtype,
            device=spec.device,
            max_length=max_length,
            truncation=c.truncation,
            batch_size=spec.batch_size,
            trust_remote_code=spec.trust_remote_code,
        )

    if not spec.use_cache:
        return build()
    return behind_cache(prepared, build, dtype=dtype, max_length=max_length, device=spec.device)


def document_tokens(prepared: Prepared) -> Callable[[str], int]:
    """Tokens of a document's model input (prefix and special tokens included) under the pinned tokenizer."""
    from ..slicing.tokens import count_tokens

    c, path = prepared.contract, prepared.model.tokenizer_path
    return lambda text: count_tokens(path, [c.render("document", text)])[0]


def behind_cache(
    prepared: Prepared, factory: Callable[[], Encoder], *, dtype: str, max_length: int, device: str, **served: Any
) -> Encoder:
    """``factory``'s encoder behind the embedding cache, keyed by the run's model and contract (``served``:
    the source, dim and manifest entry of a served deployment, which key it instead)."""
    from ..encode.cache import EmbeddingCache
    from ..encode.cached import CachedEncoder

    return CachedEncoder(
        EmbeddingCache(prepared.spec.cache_dir),
        prepared.model,
        dtype=dtype,
        max_length=max_length,
        truncation=prepared.contract.truncation,
        device=device,
        factory=factory,
        **served,
    )


def measure_index(
    dataset: Dataset,
    contract: Contract,
    query_vectors: np.ndarray,
    doc_vectors: np.ndarray,
    metrics: Sequence[str],
    exact: Mapping[str, Mapping[str, float]],
) -> IndexRun:
    """The contract's index over ``doc_vectors``, searched with ``query_vectors`` at the metrics' depth and measured
    against ``exact``, the flat ranking of the same vectors (the ground truth of its recall)."""
    from ..retrieval.index.measure import evaluate_index
    from ..retrieval.index.spec import parse_index

    return evaluate_index(
        parse_index(contract.index),
        query_vectors,
        doc_vectors,
        query_ids=dataset.query_ids,
        doc_ids=dataset.doc_ids,
        similarity=contract.similarity,
        k=search_depth(metrics),
        exact=exact,
    )


def fleet_config(spec: RunSpec, contract: Contract) -> FleetConfig:
    """How to call the served deployment the settings name (``dimensions`` sent only when asked for)."""
    from ..encode.fleet import FleetConfig

    return FleetConfig(
        urls=spec.endpoints,
        served_model=spec.served_model,
        api_key_env=spec.api_key_env,
        timeout=spec.endpoint_timeout,
        concurrency=spec.endpoint_concurrency,
        batch_size=spec.endpoint_batch_size,
        encoding_format=spec.encoding_format,
        dimensions=contract.dim if spec.endpoint_dimensions else None,
    )


def make_fleet_encoder(prepared: Prepared, *, dtype: str, max_length: int) -> Encoder:
    """The served deployment as the encoder, its identity checked now (one ``/v1/models`` per URL, no
    embeddings); behind the embedding cache, keyed by the served identity, when the cache is on."""
    from ..encode.fleet import FleetEncoder

    spec, c = prepared.spec, prepared.contract
    if spec.executor != "in-process" or spec.ray_address:
        raise SpecError("--endpoint encodes on the served deployment; drop --executor/--ray-address")
    fleet = FleetEncoder.connect(
        fleet_config(spec, c), hidden_size=prepared.model.hidden_size, normalize=c.normalize, render=c.render
    )
    if not spec.use_cache:
        return fleet
    return behind_cache(
        prepared,
        lambda: fleet,
        dtype=dtype,
        max_length=max_length,
        device="endpoint",
        source=fleet.source,
        dim=fleet.dim,
        describe=fleet.manifest_entry,
    )


def encode_dataset(
    encoder: Encoder, contract: Contract, dataset: Dataset, poolings: Sequence[str]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Pooled, full-dimension query and document vectors per pooling (one forward pass per role)."""
    qids, dids = dataset.query_ids, dataset.doc_ids
    q = encoder.encode(
        contract.render_all("query", [dataset.queries[i] for i in qids]), poolings=poolings, ids=qids, role="query"
    )
    texts = [t for _, chunk in dataset.corpus_chunks(len(dids) or 1) for t in chunk]  # a corpus on disk: read in order
    d = encoder.encode(contract.render_all("document", texts), poolings=poolings, ids=dids, role="document")
    return q, d


def score(
    prepared: Prepared,
    contract: Contract,
    q_pooled: np.ndarray | None,
    d_pooled: np.ndarray | VectorStore | None,
    *,
    metrics: Sequence[str],
    timing: dict[str, object],
    device: str,
    run_id: str | None = None,
    keep_vectors: bool = True,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    encoder: dict[str, object] | None = None,
) -> Result:
    """Finalize vectors for ``contract`` (dim, normalize), search with FAISS, score with ranx.

    Document vectors in a :class:`VectorStore` are searched block by block (``block_rows`` at a time) and
    never loaded whole; the ranking is the same as in memory. An exact in-memory search already done on exactly
    these inputs is read back from the result cache (:mod:`evalsuite.run.cache.results`; ``timing.result_cache``).
    A contract whose retriever is not ``dense`` (:mod:`.retrieve`) ranks with it instead, over the dataset's texts
    and, when it fuses ``dense``, this search; its vectors may then be None when it reads none.
    """
    ds = prepared.dataset
    k = search_depth(metrics)
    if q_pooled is None or d_pooled is None:
        if needs_vectors(contract):
            raise SpecError(f"retrieval {contract.retrieval!r} searches the contract's vectors, and none were given")
        q_pooled = d_pooled = None
    qv = finalize(q_pooled, contract.dim, contract.normalize) if q_pooled is not None else None
    cache = (
        ScoringCache.open(prepared.spec, ds, qv, d_pooled, contract, metrics) if qv is not None else None
    )  # None: not cached
    hit = cache.load() if cache is not None else None
    t0 = time.perf_counter()
    dv: np.ndarray | None = None
    doc_integrity: IntegrityReport | None = None  # of a stored corpus, checked block by block
    research: Callable[[int], Ranking] | None = None  # the dense search again at another depth
    ranking: Ranking | None = None
    if cache is not None and hit is not None:  # searched and scored before, on exactly these inputs
        dv, ranking = cache.doc_vectors, hit.ranking
    elif qv is None or not needs_vectors(contract):
        pass  # the retriever reads no vectors
    elif isinstance(d_pooled, VectorStore):
        checker = BlockChecker(dim=contract.dim, normalized=contract.normalize)
        store, query_vectors = d_pooled, qv

        def blocks(depth: int, on_block: Callable[[np.ndarray], None] | None = None) -> Ranking:
            return block_search(
                query_vectors,
                store,
                query_ids=ds.query_ids,
                doc_ids=ds.doc_ids,
                k=depth,
                similarity=contract.similarity,
                dim=contract.dim,
                normalize=contract.normalize,
                block_rows=block_rows,
                on_block=on_block,
            )

        # the integrity check sees each block as it is searched: one read per block
        ranking, research = blocks(k, checker.add), blocks
        doc_integrity = checker.report()
    elif d_pooled is not None:
        docs = cache.doc_vectors if cache is not None else finalize(d_pooled, contract.dim, contract.normalize)
        dv, query_vectors = docs, qv

        def exact(depth: int) -> Ranking:
            return search(
                query_vectors, docs, query_ids=ds.query_ids, doc_ids=ds.doc_ids, k=depth, similarity=contract.similarity
            )

        ranking, research = exact(k), exact
    index_entry: dict[str, object] | None = None
    if contract.index != "flat" and hit is None and ranking is not None:
        if dv is None or qv is None:  # the exact ranking is the ground truth the index is measured against
            raise SpecError(INDEX_IN_MEMORY.format(index=contract.index))
        index_run = measure_index(ds, contract, qv, dv, metrics, ranking)
        ranking, index_entry, research = index_run.ranking, index_run.report.manifest_entry(), None
    retrieved: Retrieved | None = None
    if contract.retrieval != DENSE and hit is None:
        dense = dense_at(ranking, k, research) if ranking is not None else None
        retrieved = retrieve(prepared, contract, k, dense)
        ranking = retrieved.ranking
    if ranking is None:  # pragma: no cover - every branch above ranks
        raise SpecError(f"retrieval {contract.retrieval!r} gave no ranking")
    t1 = time.perf_counter()
    aggregate, per_query = (
        (hit.metrics, hit.per_query) if hit is not None else score_metrics(ds.qrels, ranking, metrics)
    )
    t2 = time.perf_counter()
    timing = dict(timing, search_seconds=round(t1 - t0, 4), score_seconds=round(t2 - t1, 4))
    retrieval_record: dict[str, object] | None = None
    if contract.retrieval != DENSE and hit is not None and hit.retrieval is not None:
        retrieval_record = dict(hit.retrieval)  # how the cached ranking was made, a hybrid's components and gain
    elif contract.retrieval != DENSE:
        retrieval_record = retrieval_entry(contract, retrieved)
        if retrieved is not None and retrieved.components:  # each component's metrics, the fusion's gain (CI)
            retrieval_record.update(components_entry(ds.qrels, retrieved, per_query, metrics))
    timing["result_cache"] = (
        cache.record(hit, ranking, aggregate, per_query, timing, retrieval_record) if cache else {"status": "off"}
    )
    man = manifest(prepared, contract, device=device, run_id=run_id or uuid.uuid4().hex[:12], encoder=encoder)
    if index_entry is not None:
        man["index"].update(index_entry)
    if retrieval_record is not None:
        man["retrieval"] = retrieval_record
    return Result(
        contract=contract,
        manifest=man,
        dataset=ds,
        metrics=aggregate,
        per_query=per_query,
        timing=timing,
        ranking=ranking,
        query_vectors=qv if keep_vectors or doc_integrity is not None else None,  # queries are few
        doc_vectors=dv if keep_vectors else None,
        warnings=list(ds.warnings) + (cache.problems if cache is not None else []),
        doc_integrity=doc_integrity,
    )


def run(
    spec: RunSpec,
    prepared: Prepared | None = None,
    encoder: Encoder | None = None,
    *,
    execution: Execution | None = None,
    with_fingerprint: bool = False,
) -> Result:
    """Evaluate one contract on one dataset (on ``execution``'s executor; chunked and block-wise from a
    memory-mapped store when its ``chunk_size`` is set). ``with_fingerprint``: the manifest also holds the
    probe texts' vectors (``evalsuite run``'s manifest.json, for ``evalsuite verify``)."""
    prepared = prepared or prepare(spec)
    execution = execution or execution_of(prepared.spec)  # the prepared spec: its chunk size decided
    c, ds = prepared.contract, prepared.dataset
    if not needs_vectors(c):  # the retriever reads the texts only (bm25): nothing is encoded
        timing = encode_timing({"query": EncodeStats(), "document": EncodeStats()}, 0.0)
        return score(prepared, c, None, None, metrics=spec.metrics, timing=timing, device="cpu")
    encoder = encoder or make_encoder(prepared, execution=execution)
    before = stats_snapshot(encoder)
    cached_by_role = encoder.cached_by_role if isinstance(encoder, Caching) else None
    served_before = {r: st.copy() for r, st in (cached_by_role or {}).items()}
    cache = encoder.cache_stats if isinstance(encoder, Caching) else None
    hits_before = (cache.hits, cache.misses) if cache is not None else None
    executor_before = executor_snapshot(encoder)
    with ExitStack() as stack:
        stack.enter_context(executor_scope())  # one Ray actor pool for both roles, released at the end
        t0 = time.perf_counter()
        if execution.blockwise:
            store_dir = execution.store_dir or Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="evalsuite-store-"))
            )
            q = encoder.encode(
                c.render_all("query", [ds.queries[i] for i in ds.query_ids]),
                poolings=[c.pooling],
                ids=ds.query_ids,
                role="query",
            )
            stores = encode_to_store(
                encoder,
                c,
                ds.corpus_chunks(execution.chunk_size),  # a corpus on disk is read a chunk at a time
                len(ds.corpus),
                store_dir,
                poolings=[c.pooling],
                dim=int((encoder.dim if isinstance(encoder, Dimensioned) else None) or prepared.model.hidden_size),
            )
            d: dict[str, np.ndarray | VectorStore] = dict(stores)
        else:
            q, d_mem = encode_dataset(encoder, c, ds, [c.pooling])
            d = dict(d_mem)
        seconds = time.perf_counter() - t0
        timing = encode_timing(role_stats_since(encoder, before), seconds)
        if cache is not None and hits_before is not None:
            timing["cache"] = {
                "hits": cache.hits - hits_before[0],
                "misses": cache.misses - hits_before[1],
                "corrupt": cache.corrupt,
            }
        add_cached_counts(timing, cached_by_role, served_before)
        entry = encoder_entry(encoder)
        executed = executor_since(encoder, executor_before)
        if executed is not None:  # on a Ray cluster: where the time went, which nodes encoded how many rows
            timing["executor"] = executed["timing"]
            entry["nodes"] = executed["nodes"]
        result = score(
            prepared,
            c,
            q[c.pooling],
            d[c.pooling],
            metrics=spec.metrics,
            timing=timing,
            device=encoder.device,
            keep_vectors=not execution.blockwise,
            block_rows=execution.block_rows,
            encoder=entry,
        )
        if with_fingerprint:
            result.manifest["fingerprint"] = fingerprint(encoder, c, document_tokens(prepared)).to_dict()
        return result
