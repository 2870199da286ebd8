"""What the user asked for (flags or spec file). How it becomes a frozen contract is the contract's own
(``evalsuite.contract.build``: ``RunSpec`` is a ``ContractRequest``)."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from ..base.errors import SpecError
from ..base.settings import check_fields
from ..retrieval.retrievers import RETRIEVAL_SETTINGS, retrieval_param
from ..retrieval.retrievers import resolve as resolve_retrieval
from ..scoring.metrics import DEFAULT_METRICS, parse_metrics

# A corpus file this large is evaluated in bounded memory unless --chunk-size says otherwise: held in memory, a
# corpus costs about twice its file size in Python objects on top of its vectors (measured: 77 MB per 100k short
# documents), while the chunked path keeps compact ids and one block of vectors (docs/scale.md).
AUTO_CHUNK_BYTES = 128 * 2**20
AUTO_CHUNK_SIZE = 65_536


@dataclass(frozen=True)
class RunSpec:
    """User settings; ``None`` means "what the model declares" or the documented default."""

    model: str | None = None
    model_name: str | None = None  # the model's lineage (None: the directory's or hub id's name)
    model_rev: str | None = None
    tokenizer_rev: str | None = None
    dataset: str | None = None
    split: str = "test"
    qrels: str | None = None
    empty_docs: str = "keep"
    empty_queries: str = "skip"
    pooling: str | None = None
    query_prefix: str | None = None
    doc_prefix: str | None = None
    dtype: str = "float32"
    max_length: int | None = None
    truncation: str = "truncate"
    dim: int | None = None
    normalize: bool | None = None
    similarity: str | None = None
    device: str = "auto"
    metrics: tuple[str, ...] = DEFAULT_METRICS
    batch_size: int = 64
    trust_remote_code: bool = False
    cache_dir: str | None = None
    use_cache: bool = True
    index: str = "flat"
    executor: str = "in-process"
    ray_address: str | None = None
    ray_actors: int = 1
    ray_ship_model: bool = False  # the model's files go to the Ray actors through the object store
    ray_model_path: str | None = None  # where every Ray node reads the model (a shared filesystem)
    chunk_size: int | None = None  # None: decided from the corpus's size (prepared.decide_chunking)
    block_rows: int = 262_144
    store_dir: str | None = None
    # a served deployment as the encoder (empty: the local reference model); None: the client's default
    endpoints: tuple[str, ...] = ()
    served_model: str | None = None
    api_key_env: str | None = None
    endpoint_timeout: float | None = None
    endpoint_concurrency: int | None = None
    endpoint_batch_size: int | None = None
    encoding_format: str | None = None
    endpoint_dimensions: bool = False
    slice_by: tuple[str, ...] | None = (
        None  # metadata fields to slice by (None: topic/domain when the queries have them)
    )
    # the retriever whose ranking is scored (evalsuite.retrieval.retrievers), and its settings (None: its default)
    retrieval: str = "dense"
    fuse: tuple[str, ...] | None = None
    fusion: str | None = None
    fusion_k: int | None = None
    fusion_depth: int | None = None
    fusion_weights: tuple[float, ...] | None = None
    fusion_norm: str | None = None
    sparse_top_k: int | None = None
    multivector_rerank: int | None = None
    multivector_projection: str | None = None
    multivector_specials: str | None = None
    bm25_k1: float | None = None
    bm25_b: float | None = None
    bm25_method: str | None = None
    bm25_stopwords: str | None = None
    bm25_stemmer: str | None = None

    def replace(self, **changes: Any) -> RunSpec:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_mapping(cls, data: dict[str, object], *, source: str) -> RunSpec:
        names = {f.name for f in dataclasses.fields(cls)}
        kw: dict[str, Any] = {}
        for key, value in data.items():
            name = key.replace("-", "_")
            if name not in names:
                raise SpecError(f"{source}: unknown setting {key!r}; known: {', '.join(sorted(names))}")
            kw[name] = value
        check_fields(cls, kw, source=source)
        if "metrics" in kw:
            kw["metrics"] = parse_metrics(kw["metrics"])
        if "endpoints" in kw:
            urls = kw["endpoints"]
            kw["endpoints"] = (urls,) if isinstance(urls, str) else tuple(str(u) for u in urls)
        if "slice_by" in kw:
            kw["slice_by"] = _fields(kw["slice_by"], source)
        if any(name in kw for name in ("retrieval", *RETRIEVAL_SETTINGS)):
            _check_retrieval(kw, source)
        return cls(**kw)


def _check_retrieval(kw: dict[str, Any], source: str) -> None:
    """Retrieval settings parsed (``fuse`` and ``fusion_weights`` as tuples) and checked together, naming ``source``."""
    try:
        for name in RETRIEVAL_SETTINGS:
            if kw.get(name) is not None:
                kw[name] = retrieval_param(name).parse(kw[name])
        given = {name: kw[name] for name in RETRIEVAL_SETTINGS if kw.get(name) is not None}
        resolve_retrieval(kw.get("retrieval", "dense"), given)
    except SpecError as exc:
        raise SpecError(f"{source}: {exc}") from None


def _fields(value: object, source: str) -> tuple[str, ...]:
    """``slice_by``: a list of field names (or one name, or comma-separated names)."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in items):
        raise SpecError(f'{source}: slice_by must be a list of metadata field names, e.g. ["topic"]; got {value!r}')
    return tuple(dict.fromkeys(v.strip() for v in items))


ENDPOINT_SETTINGS = {
    "served_model": "--served-model",
    "api_key_env": "--api-key-env",
    "endpoint_timeout": "--endpoint-timeout",
    "endpoint_concurrency": "--endpoint-concurrency",
    "endpoint_batch_size": "--endpoint-batch-size",
    "encoding_format": "--encoding-format",
    "endpoint_dimensions": "--endpoint-dimensions",
}


def check_endpoint_settings(spec: RunSpec) -> None:
    """Endpoint client settings without an endpoint would be ignored in silence: a usage error instead."""
    if spec.endpoints:
        return
    given = [flag for name, flag in ENDPOINT_SETTINGS.items() if getattr(spec, name) not in (None, False)]
    if given:
        raise SpecError(
            f"{', '.join(given)} set(s) how to call a served model, but no --endpoint URL is given: "
            "add --endpoint URL, or drop the option"
        )


def library_versions() -> dict[str, str]:
    """Versions of the libraries that shape a result, read without importing them (once per process: every
    manifest of a sweep records them)."""
    return dict(_library_versions())


@functools.cache
def _library_versions() -> tuple[tuple[str, str], ...]:
    import platform
    from importlib import metadata

    out = [("python", platform.python_version())]
    for dist in ("evalsuite", "torch", "transformers", "tokenizers", "faiss-cpu", "ranx", "numpy", "datasets"):
        try:
            out.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            continue
    return tuple(out)
