"""One evaluation, start to end: settings -> contract + dataset -> encode -> search -> score.

The CLI and the pytest plugin both call these functions; neither holds logic the other lacks.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.errors import SpecError
from ..contract import Contract
from ..datasets import Dataset
from ..encode.base import Dimensioned, Encoder, EncodeStats
from ..encode.chunked import encode_to_store
from ..encode.executors import DEFAULT_BLOCK_ROWS, Execution, build_encoder
from ..encode.ray_pool import executor_scope
from ..encode.settings import EncoderSettings
from ..encode.store import VectorStore
from ..scoring.metrics import evaluate as score_metrics
from .cache.scoring import ScoringCache
from .fingerprint import fingerprint
from .prepared import Prepared as Prepared  # re-exported: callers import it from here
from .prepared import encoder_settings, execution_of
from .prepared import prepare as prepare  # re-exported: callers import it from here
from .record import EncodeWatch, encode_timing, manifest
from .result import Result
from .retrieve import needs_vectors, retrieval_record
from .searching import Ranked, from_cache, rank, search_inputs
from .searching import measure_index as measure_index  # re-exported: callers import it from here
from .spec import RunSpec

if TYPE_CHECKING:
    from ..encode.fleet import FleetConfig


def make_encoder(
    prepared: Prepared, *, dtype: str | None = None, max_length: int | None = None, execution: Execution | None = None
) -> Encoder:
    """The reference encoder for this contract on ``execution``'s executor (in this process by default),
    wrapped by the embedding cache when enabled; the model loads on the first cache miss, never before."""
    spec = prepared.spec
    settings = encoder_settings(prepared, dtype=dtype, max_length=max_length)
    execution = execution or execution_of(spec)

    if spec.endpoints:
        return make_fleet_encoder(prepared, settings)

    def build() -> Encoder:
        return build_encoder(prepared.model, execution, settings)

    if not spec.use_cache:
        return build()
    return behind_cache(prepared, build, settings)


def document_tokens(prepared: Prepared) -> Callable[[str], int]:
    """Tokens of a document's model input (prefix and special tokens included) under the pinned tokenizer."""
    from ..slicing.tokens import count_tokens

    c, path = prepared.contract, prepared.model.tokenizer_path
    return lambda text: count_tokens(path, [c.render("document", text)])[0]


def behind_cache(
    prepared: Prepared, factory: Callable[[], Encoder], settings: EncoderSettings, **served: Any
) -> Encoder:
    """``factory``'s encoder behind the embedding cache, keyed by the run's model and ``settings`` (``served``:
    the source, dim and manifest entry of a served deployment, which key it instead)."""
    from ..encode.cache import EmbeddingCache
    from ..encode.cached import CachedEncoder

    return CachedEncoder(
        EmbeddingCache(prepared.spec.cache_dir),
        prepared.model,
        settings=settings,
        factory=factory,
        **served,
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


def make_fleet_encoder(prepared: Prepared, settings: EncoderSettings) -> Encoder:
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
        replace(settings, device="endpoint"),
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

    The steps (:mod:`.searching`): the inputs checked, the result cache opened, the ranking made (a search
    strategy, the index measured, the retriever) or read back, the metrics, the retrieval record, the manifest
    (:func:`run_manifest`), the Result.
    """
    ds = prepared.dataset
    inputs = search_inputs(ds, contract, q_pooled, d_pooled, metrics, block_rows)
    cache = (
        ScoringCache.open(prepared.spec, ds, inputs.queries, inputs.documents, contract, metrics)
        if inputs.queries is not None
        else None
    )  # None: not cached
    hit = cache.load() if cache is not None else None
    t0 = time.perf_counter()
    if cache is not None and hit is not None:  # searched and scored before, on exactly these inputs
        ranked = from_cache(hit, cache)
    else:
        finalized = cache.doc_vectors if cache is not None else None
        ranked = rank(prepared, replace(inputs, finalized_documents=finalized))
    t1 = time.perf_counter()
    aggregate, per_query = (
        (hit.metrics, hit.per_query) if hit is not None else score_metrics(ds.qrels, ranked.ranking, metrics)
    )
    t2 = time.perf_counter()
    timing = dict(timing, search_seconds=round(t1 - t0, 4), score_seconds=round(t2 - t1, 4))
    record = retrieval_record(
        contract, ranked.retrieved, hit.retrieval if hit is not None else None, ds.qrels, per_query, metrics
    )
    timing["result_cache"] = (
        cache.record(hit, ranked.ranking, aggregate, per_query, timing, record) if cache else {"status": "off"}
    )
    man = run_manifest(prepared, contract, ranked, record, device=device, run_id=run_id, encoder=encoder)
    searched = ranked.searched
    return Result(
        contract=contract,
        manifest=man,
        dataset=ds,
        metrics=aggregate,
        per_query=per_query,
        timing=timing,
        ranking=ranked.ranking,
        query_vectors=inputs.queries if keep_vectors or searched.doc_integrity is not None else None,  # queries: few
        doc_vectors=searched.doc_vectors if keep_vectors else None,
        warnings=list(ds.warnings) + (cache.problems if cache is not None else []),
        doc_integrity=searched.doc_integrity,
    )


def run_manifest(
    prepared: Prepared,
    contract: Contract,
    ranked: Ranked,
    retrieval: dict[str, object] | None,
    *,
    device: str,
    run_id: str | None = None,
    encoder: dict[str, object] | None = None,
) -> dict[str, Any]:
    """The run's manifest (:func:`.record.manifest`) with what the ranking step measured: the index's entry and,
    for a retriever other than ``dense``, its ``retrieval`` record."""
    man = manifest(prepared, contract, device=device, run_id=run_id or uuid.uuid4().hex[:12], encoder=encoder)
    if ranked.index_entry is not None:
        man["index"].update(ranked.index_entry)
    if retrieval is not None:
        man["retrieval"] = retrieval
    return man


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
    probe texts' vectors (``evalsuite run``'s manifest.json, for ``evalsuite verify``).

    :func:`prepare` decides the spec (its chunk size among others): ``spec`` is only what is prepared when
    ``prepared`` is None, and every setting the run reads (execution, metrics) comes from ``prepared.spec``."""
    prepared = prepared or prepare(spec)
    execution = execution or execution_of(prepared.spec)
    c, metrics = prepared.contract, prepared.spec.metrics
    if not needs_vectors(c):  # the retriever reads the texts only (bm25): nothing is encoded
        timing = encode_timing({"query": EncodeStats(), "document": EncodeStats()}, 0.0)
        return score(prepared, c, None, None, metrics=metrics, timing=timing, device="cpu")
    encoder = encoder or make_encoder(prepared, execution=execution)
    watch = EncodeWatch.start(encoder)
    with ExitStack() as stack:
        stack.enter_context(executor_scope())  # one Ray actor pool for both roles, released at the end
        t0 = time.perf_counter()
        if execution.blockwise:
            store_dir = execution.store_dir or Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="evalsuite-store-"))
            )
            q, d = encode_to_disk(encoder, prepared, execution.chunk_size, store_dir)
        else:
            q, d_mem = encode_dataset(encoder, c, prepared.dataset, [c.pooling])
            d = dict(d_mem)
        timing, entry = watch.since(time.perf_counter() - t0)
        result = score(
            prepared,
            c,
            q[c.pooling],
            d[c.pooling],
            metrics=metrics,
            timing=timing,
            device=encoder.device,
            keep_vectors=not execution.blockwise,
            block_rows=execution.block_rows,
            encoder=entry,
        )
        if with_fingerprint:
            result.manifest["fingerprint"] = fingerprint(encoder, c, document_tokens(prepared)).to_dict()
        return result


def encode_to_disk(
    encoder: Encoder, prepared: Prepared, chunk_size: int, store_dir: Path
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray | VectorStore]]:
    """The queries in memory, the documents ``chunk_size`` at a time into a memory-mapped store under
    ``store_dir`` (a corpus on disk is read a chunk at a time), for a block-wise search."""
    c, ds = prepared.contract, prepared.dataset
    q = encoder.encode(
        c.render_all("query", [ds.queries[i] for i in ds.query_ids]),
        poolings=[c.pooling],
        ids=ds.query_ids,
        role="query",
    )
    stores = encode_to_store(
        encoder,
        c,
        ds.corpus_chunks(chunk_size),
        len(ds.corpus),
        store_dir,
        poolings=[c.pooling],
        dim=int((encoder.dim if isinstance(encoder, Dimensioned) else None) or prepared.model.hidden_size),
    )
    return q, dict(stores)
