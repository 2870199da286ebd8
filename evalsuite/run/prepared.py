"""Settings -> checked inputs: the pinned model, the contract and the loaded dataset, all before the first
forward pass (and where and how the reference encodes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..base.errors import SpecError
from ..base.resources import dataset_dir
from ..contract import Contract, build_contract
from ..datasets import Dataset, load_dataset
from ..encode.executors import Execution
from ..encode.settings import EncoderSettings
from ..model import ModelInfo, resolve_model
from .spec import AUTO_CHUNK_BYTES, AUTO_CHUNK_SIZE, RunSpec, check_endpoint_settings


@dataclass(frozen=True)
class Prepared:
    """Everything checked and loaded before the first forward pass."""

    spec: RunSpec  # its chunk_size decided (an int): the automatic choice below made, when it was left to it
    model: ModelInfo
    contract: Contract
    dataset: Dataset
    notes: tuple[str, ...] = ()  # what was decided for the user, and why (printed by the CLI)


def prepare(spec: RunSpec) -> Prepared:
    """Resolve and pin the model (revision errors come here, before any encoding), load the dataset."""
    info = resolve_model(spec.model, revision=spec.model_rev, tokenizer_revision=spec.tokenizer_rev)
    contract = build_contract(spec, info)
    check_endpoint_settings(spec)
    if contract.index != "flat" and spec.chunk_size:
        raise SpecError(INDEX_IN_MEMORY.format(index=contract.index))
    _check_retrieval_model(info, contract)
    spec, notes = decide_chunking(spec, contract.index)
    notes = tuple(f"contract departure: {d}" for d in contract.departures) + notes
    execution_of(spec)  # executor settings are checked before the dataset loads
    dataset = load_dataset(
        dataset_dir(spec.dataset),
        spec.split,
        spec.qrels,
        empty_docs=spec.empty_docs,
        empty_queries=spec.empty_queries,
        on_disk=bool(spec.chunk_size),  # a chunked run reads the corpus texts from disk, chunk by chunk
        spool_dir=spec.store_dir,
        index_dir=corpus_index_dir(spec),
    )
    return Prepared(spec, info, contract, dataset, notes)


def corpus_index_dir(spec: RunSpec) -> Path:
    """Where a chunked run keeps the index of its corpus file between runs: ``corpus-index/`` in the cache
    directory (``--cache-dir``, ``$EVALSUITE_CACHE_DIR`` or the user cache). Keyed by the file's sha256, it is
    reused only for the same bytes, so ``--no-cache`` (which re-encodes) leaves it on."""
    from ..datasets.corpusindex import SUBDIR
    from ..encode.cache import cache_root

    return cache_root(spec.cache_dir) / SUBDIR


def _check_retrieval_model(info: ModelInfo, contract: Contract) -> None:
    """A retriever that runs the model's sparse head (``sparse``, a hybrid fusing it) needs one: refused here,
    before the dataset loads and anything is written."""
    from ..retrieval.retrievers import parse_retrieval

    if "sparse" in parse_retrieval(contract.retrieval).components:
        from ..model.sparse_layout import sparse_head

        sparse_head(info.path, info.hidden_size)


COMPRESSION_RATIO = 4  # a compressed corpus file is counted as this many times its size


def corpus_bytes(dataset: Path) -> int:
    """The size of a dataset's corpus as read: a BEIR ``corpus.jsonl`` (a compressed one counted at
    ``COMPRESSION_RATIO`` times its size) or a saved Hugging Face dataset's corpus Arrow files; 0 when neither."""
    from ..datasets.files import COMPRESSED_SUFFIXES, find_variant

    found, _ = find_variant(dataset / "corpus.jsonl")
    if found is not None:
        size = found.stat().st_size
        return size * COMPRESSION_RATIO if found.name.endswith(COMPRESSED_SUFFIXES) else size
    arrow = dataset / "corpus"
    return sum(p.stat().st_size for p in arrow.glob("*.arrow")) if arrow.is_dir() else 0


def decide_chunking(spec: RunSpec, index: str) -> tuple[RunSpec, tuple[str, ...]]:
    """``chunk_size`` None (not given): in memory, unless the corpus is large and the run can be block-wise (an exact
    flat index; an approximate index is built in memory), then chunks of ``AUTO_CHUNK_SIZE``, said in a note."""
    if spec.chunk_size is not None:
        return spec, ()
    size = corpus_bytes(dataset_dir(spec.dataset))
    if size < AUTO_CHUNK_BYTES or index != "flat":
        return spec.replace(chunk_size=0), ()
    note = (
        f"the corpus is large ({size / 2**20:,.0f} MiB): encoding {AUTO_CHUNK_SIZE:,} documents at a time into an "
        "on-disk store and searching it block by block, to keep memory bounded (same ranking as in memory); "
        "--chunk-size 0 keeps everything in memory, --chunk-size N sets the chunk"
    )
    return spec.replace(chunk_size=AUTO_CHUNK_SIZE), (note,)


INDEX_IN_MEMORY = (
    "index {index!r} is built over the document vectors in memory; it cannot be combined with "
    "--chunk-size (block-wise exact search): drop one of the two"
)


def execution_of(spec: RunSpec) -> Execution:
    """Where and how the reference encodes, as the settings say (in this process, in memory, by default)."""
    return Execution(
        executor=spec.executor,
        ray_address=spec.ray_address,
        ray_actors=spec.ray_actors,
        ray_ship_model=spec.ray_ship_model,
        ray_model_path=spec.ray_model_path,
        chunk_size=spec.chunk_size or 0,
        block_rows=spec.block_rows,
        store_dir=Path(spec.store_dir) if spec.store_dir else None,
    )


def encoder_settings(prepared: Prepared, *, dtype: str | None = None, max_length: int | None = None) -> EncoderSettings:
    """How the reference model encodes for this run, built once from the decided spec and the contract
    (``dtype`` and ``max_length`` override the contract's, as a sweep's cells do)."""
    spec, c = prepared.spec, prepared.contract
    return EncoderSettings(
        dtype=dtype or c.dtype,
        device=spec.device,
        max_length=max_length or c.max_length,
        truncation=c.truncation,
        batch_size=spec.batch_size,
        trust_remote_code=spec.trust_remote_code,
    )
